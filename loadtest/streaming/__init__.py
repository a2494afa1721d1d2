"""``make stream-benchmark``: one streaming process holding thousands of open streams, and how
long a post takes to reach all of them (``python -m loadtest.streaming --size smoke|full``)."""
