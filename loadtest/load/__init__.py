"""The load report: the locust run of loadtest/README.md at several graph sizes on the
embedded default, and the saturation point, in one folder (``make load``)."""
