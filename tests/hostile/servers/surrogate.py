"""Answers ``tools/call`` with a result holding a lone surrogate, ``"\\ud800"``: what
Python's json.dumps writes for a file name that is not valid UTF-8."""

from __future__ import annotations

import _stdio


def main() -> None:
    parser = _stdio.parser(__doc__)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(capabilities={"tools": {}})

    def on_message(message: object) -> bool:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            text = "report-\udc80\ud800.txt"  # os.listdir's name for b"report-\x80..."
            result = {"content": [{"type": "text", "text": text}]}
            _stdio.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return True
        return False

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
