"""Human review of graded criteria in the browser (``python -m codesign.review``): the paper's expert audit,
repeatable, with labels kept in the store for the agreement tables of ``python -m codesign.report``."""

from codesign.review.items import Query, items_of, stratified_sample
from codesign.review.server import Review, serve

__all__ = ["Query", "Review", "items_of", "serve", "stratified_sample"]
