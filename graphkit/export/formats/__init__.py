"""One module per export format; the module name is the format name with
``-`` for ``_`` (see :mod:`graphkit.export.registry`)."""
