"""Thin, lazily imported glue to heavy libraries (torch, triton, flag_gems, vendor modules)."""

from __future__ import annotations
