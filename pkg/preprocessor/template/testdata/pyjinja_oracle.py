#!/usr/bin/env python3
"""Render the hfjinja unit/e2e gate cases and this package's own cases
(pyjinja_cases.json, next to this script) with Python jinja2 configured as
transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, generation block, tojson override, raise_exception,
strftime_now frozen at 2025-07-10T12:00:00Z). Prints JSON lines
{file, name, py} or {file, name, error} for comparison with the Go renderer
and with the JS-derived expectations. Needs only `jinja2`.

usage (from this directory):
  python3 pyjinja_oracle.py ../../../../../shared/testdata/chat_templates > pyjinja_expected.jsonl
"""
import json, os, sys, datetime
import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2 import nodes

class AssistantTracker(Extension):
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)
    def _render(self, caller):
        return caller()

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)

NOW = datetime.datetime(2025, 7, 10, 12, 0, 0)
def strftime_now(fmt):
    return NOW.strftime(fmt)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

def run(file, name, src, ctx):
    try:
        out = env.from_string(src).render(**ctx)
        print(json.dumps({"file": file, "name": name, "py": out}, ensure_ascii=False))
    except Exception as e:
        print(json.dumps({"file": file, "name": name, "error": f"{type(e).__name__}: {e}"}, ensure_ascii=False))

d = sys.argv[1]
for c in json.load(open(f"{d}/hfjinja_unit_cases.json")):
    run("unit", c["name"], c["template"], c["context"])
for c in json.load(open(f"{d}/hfjinja_e2e_cases.json")):
    run("e2e", c["group"] + "/" + c["name"], c["chat_template"], c["data"])
here = os.path.dirname(os.path.abspath(__file__))
for c in json.load(open(os.path.join(here, "pyjinja_cases.json"))):
    run("local", c["name"], c["template"], c["context"])
