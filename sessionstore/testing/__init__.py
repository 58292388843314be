"""Test helpers that ship with the package: a throwaway PostgreSQL (or Citus) cluster and a local
Anthropic Messages API server, so that agents built on sessionstore can test against real
components the way sessionstore's own suite does."""

from .anthropic_server import AnthropicServer, InvalidRequest, validate_request
from .citus import CitusCluster, citus_installed
from .postgres import PostgresCluster, PostgresUnavailable

__all__ = ["AnthropicServer", "CitusCluster", "InvalidRequest", "PostgresCluster", "PostgresUnavailable", "citus_installed", "validate_request"]
