"""One module per task: ``TASK`` names the task, ``generate(out)`` writes its attachments."""
