"""The internal core over the native containers (``arrowdev._capsules``): what every layer above shares.

- :mod:`.types`: ``DataType`` (a parsed Arrow type) and ``Device``;
- :mod:`.layout`: what each Arrow type keeps in its buffers (the one table of layouts), null counting;
- :mod:`.chunks`: a column's chunks and what is done with them (null counts, reads after producers'
  events, slicing, alignment, arrays ready to export);
- :mod:`.from_arrow` / :mod:`.to_arrow`: import from and export to the Arrow PyCapsule protocols.

Nothing here imports the user objects (``column.py``, ``table.py``) or the layers above; the device
runtime it uses (waiting on events, reading device bytes) is :mod:`arrowdev.gpu`, below it.
"""
