"""The published OpenAPI 3.1 document, derived from the catalog's JSON Schemas.

Each event gets its own path (``/v1/events/before_tool_call``, ...) so every
request body has its exact schema; the server routes them through one
``/v1/events/{event}`` handler.
"""

from __future__ import annotations

from typing import Any

import msgspec

from interlock.engine.catalog import SPECS
from interlock.engine.outcome import OutcomeRecord
from interlock.events import EVENT_TYPES

_REF = "#/components/schemas/{name}"


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {
        "schema": {"$ref": _REF.format(name="Error")}}}}


_AUTH_ERRORS = {"401": _error("missing or unknown bearer token"),
                "403": _error("token lacks the role, or a foreign Host, Origin or project")}
_PROJECT = {"name": "X-Interlock-Project", "in": "header", "required": False,
            "description": "Absolute project root (URL-quoted); refused unless it is "
                           "this server's project.", "schema": {"type": "string"}}


def build_spec(hosts: tuple[str, ...]) -> dict[str, Any]:
    _, components = msgspec.json.schema_components(
        [*EVENT_TYPES.values(), OutcomeRecord], ref_template=_REF)
    components["Error"] = {"type": "object", "required": ["error"], "properties": {
        "error": {"type": "string"}, "field": {"type": ["string", "null"]}}}
    paths: dict[str, Any] = {}
    for spec in SPECS:
        cls = EVENT_TYPES[spec.name]
        paths[f"/v1/events/{spec.name}"] = {"post": {
            "operationId": f"event_{spec.name}", "summary": spec.doc,
            "security": [{"bearer": []}], "parameters": [_PROJECT],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": _REF.format(name=cls.__name__)}}}},
            "responses": {
                "200": {"description": "the merged outcome", "content": {"application/json": {
                    "schema": {"$ref": _REF.format(name="OutcomeRecord")}}}},
                "400": _error("the body is not a JSON object"),
                "413": _error("the body is too large"),
                "422": _error("a payload field is invalid (the error names it)"),
                **_AUTH_ERRORS}}}
    paths["/v1/bridge/{agent}"] = {"post": {
        "operationId": "bridge", "summary": "Evaluate another agent's raw hook input.",
        "security": [{"bearer": []}], "parameters": [
            {"name": "agent", "in": "path", "required": True,
             "schema": {"type": "string", "enum": list(hosts)}}, _PROJECT],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"type": "object"}}}},
        "responses": {"200": {"description": "the merged outcome", "content": {
            "application/json": {"schema": {"$ref": _REF.format(name="OutcomeRecord")}}}},
            "400": _error("the body is not a JSON object"),
            "404": _error("unknown agent"), "413": _error("the body is too large"),
            "422": _error("the input does not map to a catalog event"), **_AUTH_ERRORS}}}
    ok = {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}
    paths["/v1/status"] = {"get": {"operationId": "status", "summary":
        "Counters, breaker states, the revision, unresolved dead letters, the store's health. "
        "A token, or a Unix-socket peer.",
        "responses": {"200": ok, **_AUTH_ERRORS}}}
    paths["/v1/hooks"] = {"get": {"operationId": "hooks", "summary":
        "The active hooks. A token, or a Unix-socket peer.",
        "responses": {"200": ok, **_AUTH_ERRORS}}}
    paths["/v1/runtime/hooks/dead-letter"] = {"get": {
        "operationId": "dead_letters", "summary": "Dead letters (admin).",
        "security": [{"bearer": []}], "parameters": [
            {"name": "unresolved", "in": "query", "schema": {"type": "boolean"}},
            {"name": "limit", "in": "query",
             "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
            {"name": "before", "in": "query", "description":
             "the next page: the next_before of the previous one",
             "schema": {"type": "integer", "minimum": 0}}],
        "responses": {"200": ok, "404": _error("no dead-letter store"),
                      "422": _error("bad query parameter"), **_AUTH_ERRORS}}}
    paths["/v1/runtime/hooks/dead-letter/{record_id}/resolve"] = {"post": {
        "operationId": "resolve_dead_letter", "summary": "Mark a dead letter resolved (admin).",
        "security": [{"bearer": []}], "parameters": [
            {"name": "record_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {"200": ok, "404": _error("no such record, or no store"),
                      **_AUTH_ERRORS}}}
    paths["/v1/runtime/reload"] = {"post": {
        "operationId": "reload", "summary": "Reload the configuration (admin).",
        "security": [{"bearer": []}],
        "responses": {"200": ok, "404": _error("this server has no registry to reload"),
                      **_AUTH_ERRORS}}}
    paths["/v1/openapi.json"] = {"get": {"operationId": "openapi", "summary": "This document.",
                                         "responses": {"200": ok}}}
    paths["/v1/ready"] = {"get": {"operationId": "ready", "summary":
        "Readiness for a load balancer: 200 while hooks are loaded and the store commits, "
        "else 503 with a short reason. Open.",
        "responses": {"200": ok, "503": _error("not ready")}}}
    paths["/metrics"] = {"get": {"operationId": "metrics", "summary":
        "Prometheus text: executions, failures, blocks, latency per hook, store health. "
        "A token, or a Unix-socket peer.",
        "responses": {"200": {"description": "Prometheus exposition format", "content": {
            "text/plain": {"schema": {"type": "string"}}}},
            "404": _error("this server keeps no metrics"), **_AUTH_ERRORS}}}
    frame = {"description": "the exchange's end (type reply, skipped, blocked, withheld, "
                            "stopped or error), or a question to answer",
             "content": {"application/json": {"schema": {"$ref": _REF.format(
                 name="ChatFrame")}}}}
    components["ChatMessage"] = {
        "type": "object", "required": ["channel", "text"], "additionalProperties": False,
        "properties": {"channel": {"type": "string", "minLength": 1, "maxLength": 200},
                       "text": {"type": "string"},
                       "message_id": {"type": "string", "maxLength": 200}}}
    components["ChatAnswer"] = {
        "type": "object", "required": ["id", "allow"], "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "allow": {"type": "boolean"}}}
    components["ChatFrame"] = {
        "type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": ["reply", "skipped", "blocked", "withheld",
                                                "stopped", "error", "question", "answered",
                                                "delta"]},
            "text": {"type": "string"}, "reason": {"type": "string"},
            "status": {"type": "string"}, "session_id": {"type": "string"},
            "channel": {"type": "string"}, "message_id": {"type": "string"},
            "id": {"type": "string"}, "tool_name": {"type": "string"},
            "args": {"type": "object"}, "timeout_s": {"type": "number"}}}
    chat_errors = {"400": _error("the body is not a JSON object"),
                   "404": _error("no chat gateway, or no such pending question"),
                   "413": _error("the body is too large"),
                   "422": _error("a field is invalid, or the body names a sender"),
                   **_AUTH_ERRORS}
    paths["/v1/chat"] = {"post": {
        "operationId": "chat", "summary": "Send a chat message to this sender's session on "
        "the channel (the sender is the token's). The same messages go over the WebSocket "
        "/v1/chat/ws ({type: message|answer, ...}; frames back include streamed deltas).",
        "security": [{"bearer": []}], "parameters": [_PROJECT],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": _REF.format(name="ChatMessage")}}}},
        "responses": {"200": frame, **chat_errors}}}
    paths["/v1/chat/answer"] = {"post": {
        "operationId": "chat_answer", "summary": "Answer a pending permission question by "
        "id; returns what the exchange does next.",
        "security": [{"bearer": []}], "parameters": [_PROJECT],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": _REF.format(name="ChatAnswer")}}}},
        "responses": {"200": frame, **chat_errors}}}
    return {"openapi": "3.1.0",
            "info": {"title": "Interlock", "version": "1",
                     "description": "Lifecycle hooks for LLM agents: evaluate events through "
                                    "the active hooks."},
            "paths": paths,
            "components": {"schemas": components, "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"}}}}
