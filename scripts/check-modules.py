#!/usr/bin/env python3
"""Checks the module structure of every crate in the workspace: no import circles between a
crate's modules. (The order of the stages is Cargo's to enforce: each stage is a crate, and
`tests/tests/layering.rs` checks which crate may depend on which.)

A module depends on another when its code names a path into it (`use crate::a::b`,
`super::c::d`, `crate::a::f()` inline). A module and its own ancestors are left out of the
circle check: a parent re-exports its children and children use the parent's shared types,
which is how Rust folders are built, not a circle. Test modules (`tests`, in a file or inline) are left out.

Usage: scripts/check-modules.py [-v]     (exits 1 and prints every circle and every layer
breach; -v prints each crate's module graph)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Crate roots: (name, root file). Binaries are crates of their own.
CRATES = []
DIRS = ["crates/" + c for c in os.listdir(os.path.join(ROOT, "crates"))] + ["samples", "tests"]
for crate in sorted(DIRS):
    src = os.path.join(ROOT, crate, "src")
    if not os.path.isfile(os.path.join(ROOT, crate, "Cargo.toml")) or not os.path.isdir(src):
        continue
    for root in ("lib.rs", "main.rs"):
        if os.path.isfile(os.path.join(src, root)):
            CRATES.append((f"{crate}/src/{root}", os.path.join(src, root)))
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)
CFG_TEST_MOD_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_0-9]+)\s*;")
USE_RE = re.compile(r"\buse\s+([^;]+);", re.S)
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_comments(text):
    # An inline test module (by convention at the end of its file) may use what its module
    # serves, for a cross-check; that is not an import of the module's code.
    text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests\s*\{", text)[0]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # String literals: drop their contents so paths in messages do not count.
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def modules(root_file):
    """Module path (tuple) → file, following `mod x;` declarations."""
    out = {}
    stack = [((), root_file)]
    while stack:
        path, f = stack.pop()
        out[path] = f
        text = strip_comments(open(f).read())
        tests = set(CFG_TEST_MOD_RE.findall(text))
        base = os.path.dirname(f)
        stem = os.path.splitext(os.path.basename(f))[0]
        if stem not in ("lib", "main", "mod"):
            base = os.path.join(base, stem)
        for m in MOD_RE.findall(text):
            if m in tests or m == "tests":
                continue
            for cand in (os.path.join(base, m + ".rs"), os.path.join(base, m, "mod.rs")):
                if os.path.isfile(cand):
                    stack.append((path + (m,), cand))
                    break
    return out


def expand_use(tree):
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def go(prefix, s):
        # split s at top-level commas
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            i = p.find("{")
            if i >= 0:
                go(prefix + p[:i], p[i + 1 : p.rfind("}")])
            else:
                out.append(prefix + p.split(" as ")[0])

    go("", tree)
    return out


def resolve(path, here, mods):
    parts = path.split("::")
    if parts[0] == "crate":
        cur, rest = (), parts[1:]
    elif parts[0] in ("super", "self"):
        cur = here
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                cur = cur[:-1]
            rest = rest[1:]
    else:
        return None
    best = cur
    for p in rest:
        if best + (p,) in mods:
            best = best + (p,)
        else:
            break
    return best


def deps(mods):
    graph = {m: set() for m in mods}
    for m, f in mods.items():
        text = strip_comments(open(f).read())
        paths = []
        for u in USE_RE.findall(text):
            paths.extend(p for p in expand_use(u) if p.split("::")[0] in ("crate", "super", "self"))
        paths.extend(PATH_RE.findall(text))
        for p in paths:
            t = resolve(p, m, mods)
            if t is None or t == m:
                continue
            graph[m].add(t)
    return graph


def sccs(graph):
    """Tarjan's algorithm, iterative."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


def name(m):
    return "::".join(m) or "(root)"


def main():
    verbose = "-v" in sys.argv
    bad = 0
    for crate, root in CRATES:
        mods = modules(root)
        g = deps(mods)
        # Leave out edges between a module and its ancestors.
        acyclic_view = {
            m: {t for t in ts if not (t == m[: len(t)] or m == t[: len(m)])} for m, ts in g.items()
        }
        if verbose:
            print(f"{crate}:")
            for m in sorted(acyclic_view):
                print(f"  {name(m)} -> {', '.join(name(t) for t in sorted(acyclic_view[m]))}")
        for comp in sccs(acyclic_view):
            if len(comp) > 1:
                bad += 1
                print(f"{crate}: import circle: {' <-> '.join(sorted(name(m) for m in comp))}")
    if bad:
        print(f"check-modules: {bad} problem(s)")
        return 1
    print(f"check-modules: {len(CRATES)} crates, no import circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
