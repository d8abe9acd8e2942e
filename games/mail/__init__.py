"""Mail to players: the outbox, reminders, digests, unsubscribe, and their pages."""
