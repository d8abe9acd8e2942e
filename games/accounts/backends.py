"""The sign-in backend: Django's own, but the signed-in user of every request is read with its
profile in the same query, since every page's header asks whether it is a guest's."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User


class ProfileBackend(ModelBackend):
    def get_user(self, user_id: Any) -> User | None:
        try:
            user = User._default_manager.select_related("profile").get(pk=user_id)
        except User.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
