"""Rows → node and edge tables, as a contract says.

:mod:`.conform` brings the sources' columns to the contract's types and joins them into
one table; :mod:`.verdict` decides which rows are used and why the others are rejected;
:mod:`.project` makes the node and edge tables (with :mod:`.groups`, :mod:`.edges` and
:mod:`.unnest`); :mod:`.checks` runs the identity checks of ``graphkit check``.
"""
