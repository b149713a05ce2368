"""Vertical packs: domain data, tools and skills built on tether's core (one subpackage per pack)."""
