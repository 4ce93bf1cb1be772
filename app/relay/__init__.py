"""One WebSocket to one sandboxed demo server: sessions, the reconnect hub, the two wire modes."""
