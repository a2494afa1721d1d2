"""Celery workers: thin tasks that call socialapp's fan-out services."""
