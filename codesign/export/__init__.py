"""Writing codesign's results and tasks in other tools' formats: Inspect AI eval logs, Harbor task folders."""
