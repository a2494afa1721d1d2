"""Entry points: the processes the service runs as, assembled from the layers below."""
