"""Curation (the paper's §3.2 and Appendix I): real coding sessions → deduplicated, filtered, scored and
consolidated candidates → recovered, gated draft tasks for experts. ``python -m codesign.curate``."""

from codesign.curate.pipeline import Curated, Settings, curate
from codesign.curate.records import AttachmentRef, FileEdit, Query, Unreadable, WorkspaceRef

__all__ = ["AttachmentRef", "Curated", "FileEdit", "Query", "Settings", "Unreadable", "WorkspaceRef", "curate"]
