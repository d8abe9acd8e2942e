"""Request plumbing: htmx requests, input checks, middleware, rate limits, health."""
