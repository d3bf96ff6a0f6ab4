"""Importers that turn other benchmarks into codesign task suites."""
