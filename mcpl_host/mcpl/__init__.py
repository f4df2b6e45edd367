"""The pure MCPL core: capability paths, the grant, the method table, the hold buffer.

Like :mod:`mcpl_host.protocol`, nothing here performs I/O or imports trio. The trio
driver asks these modules what an MCPL message means and does what they answer.

- :mod:`.capabilities`: the capability tree, pattern matching, the effective grant;
- :mod:`.grant`: the ``featureSets/update`` state machine (what is granted, when);
- :mod:`.methods`: the tables of MCPL methods and the admission decision;
- :mod:`.planes`: the hold buffer for inbound traffic until a receipt;
- :mod:`.dedupe`: bounded memory of ``push/event`` ids;
- :mod:`.types`: typed params and results of the MCPL hooks.
"""
