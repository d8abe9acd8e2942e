"""Accounts: sign-up, e-mail, guests, profiles and their pages."""
