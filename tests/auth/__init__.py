"""mcpl_host.auth: the token stores and the loopback redirect."""
