"""Reliability report: steady load with faults injected, then proof that no post was lost.

``python -m loadtest.reliability [--minutes M] [--out DIR]`` (``make reliability``) starts two
redis-servers (timelines, broker), the API (``socialapp serve`` on the embedded store) and a
worker process for large fan-outs, seeds a graph, runs locust with a worker SIGKILLed, the
timelines Redis and the broker Redis crashed and restarted and a burst of bad input, then
checks every acknowledged post. See docs/reliability.md.
"""
