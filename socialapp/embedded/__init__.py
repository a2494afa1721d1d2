"""What only the embedded default needs: a redis-server the service starts itself, and
mongomock made to keep MongoDB's guarantees (atomic operations, transactions) in one process.

Production never runs this code; the stores choose it only when no MongoDB is configured.
"""
