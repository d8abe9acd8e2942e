from __future__ import annotations

from django.contrib import admin

from .models import Game, Move, Profile, Seat


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    fields = ["index", "user", "bot", "deadline", "place", "joined_at"]
    raw_id_fields = ["user"]


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "clock", "ply", "created_at", "finished_at"]
    list_filter = ["kind", "status", "clock"]
    search_fields = ["id", "seats__user__username"]
    readonly_fields = ["seed_sha256", "ply", "version", "state", "created_at"]
    inlines = [SeatInline]
    date_hierarchy = "created_at"


@admin.register(Seat)
class SeatAdmin(admin.ModelAdmin):
    list_display = ["game", "index", "user", "bot", "deadline", "place"]
    list_filter = ["bot"]
    raw_id_fields = ["game", "user"]


@admin.register(Move)
class MoveAdmin(admin.ModelAdmin):
    list_display = ["game", "ply", "seat", "at"]
    raw_id_fields = ["game"]
    readonly_fields = ["game", "ply", "seat", "at", "move", "outcome"]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "is_guest", "email_verified"]
    list_filter = ["is_guest", "email_verified"]
    raw_id_fields = ["user"]
