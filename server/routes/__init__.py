"""One module per resource; each route parses, calls ONE rag function through server.calls.call, and
serialises through a response model."""
