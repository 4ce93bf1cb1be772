"""JSON-RPC framing, classification, validation and explanations; the session transcript."""
