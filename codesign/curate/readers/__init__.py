"""Readers of session logs: each turns its format into :class:`~codesign.curate.records.Query` records and
:class:`~codesign.curate.records.Unreadable` problems."""
