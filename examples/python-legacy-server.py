#!/usr/bin/env python3
"""A legacy MCP server in Python, standard library only.

It shows that the gateway fronts servers in any language: it speaks MCP over
stdio (newline-delimited JSON-RPC 2.0) and answers initialize, ping,
tools/list and tools/call; notifications are accepted and never answered.

Run: python3 examples/python-legacy-server.py
"""

import json
import sys

SUPPORTED_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

TOOLS = [
    {
        "name": "add",
        "description": "Adds two numbers; returns the sum as text.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "upper",
        "description": "Upper-cases a text; returns JSON text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "fail",
        "description": "Fails with an isError result.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def text_result(text, is_error=False):
    result = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def number_text(value):
    # Integral sums print without a fraction, as JSON would.
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def call_tool(name, args):
    if name == "add":
        a, b = args.get("a"), args.get("b")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)):
            return text_result("a and b must be numbers", is_error=True)
        return text_result(number_text(a + b))
    if name == "upper":
        text = args.get("text")
        if not isinstance(text, str):
            return text_result("text must be a string", is_error=True)
        return text_result(json.dumps({"text": text.upper()}))
    if name == "fail":
        return text_result("Something went wrong in the Python tool", is_error=True)
    return None


def handle(message):
    """Returns the response for a request, or None for a notification."""
    method = message.get("method")
    if "id" not in message or not isinstance(method, str):
        return None
    request_id = message["id"]
    params = message.get("params") or {}

    def ok(result):
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def error(code, text):
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}

    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
        return ok(
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "python-legacy-server", "version": "1.0.0"},
            }
        )
    if method == "ping":
        return ok({})
    if method == "tools/list":
        return ok({"tools": TOOLS})
    if method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if not isinstance(args, dict):
            return error(-32602, "arguments must be an object")
        result = call_tool(name, args)
        if result is None:
            return error(-32602, f"Unknown tool: {name}")
        return ok(result)
    return error(-32601, f"Method not found: {method}")


def main():
    # MCP stdio is UTF-8 whatever the locale says.
    sys.stdin.reconfigure(encoding="utf-8")
    sys.stdout.reconfigure(encoding="utf-8")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            response = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            if not isinstance(message, dict):
                response = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
            else:
                response = handle(message)
        if response is not None:
            sys.stdout.write(json.dumps(response, separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
