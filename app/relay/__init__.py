"""A learner's connection to one sandboxed server: sessions and their lives, the two WebSocket wire
modes, and Streamable HTTP (the listener, httpwire.py; the wire, httptransport.py)."""
