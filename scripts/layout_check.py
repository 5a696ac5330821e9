#!/usr/bin/env python3
"""Checks that the layout shows the architecture: reads which C file needs
which (its #include "..." lines, and the global symbols each object file
of a build tree takes from another, read with nm), then prints every circle
of files (two or more files that need each other) and every include of a
header that lives in a folder above the includer's. foo.c and foo.h count
as one file; a module's private header (*_internal.h) as part of it.

Exits 1 when it finds one that is not KNOWN below (each with its reason).

usage: scripts/layout_check.py [SRC [BUILD]] [--edges]   (default: . build)
"""
import os, re, subprocess, sys
from collections import defaultdict

SKIP = ('tests/', 'bench/', 'build', '.git')
args = [a for a in sys.argv[1:] if not a.startswith('--')]
src = args[0] if args else '.'
build = args[1] if len(args) > 1 else os.path.join(src, 'build')

# Circles that may remain, each with its reason (none today).
KNOWN_CIRCLES = set()
# The pieces every controller tier shares stay at controller/'s top.
KNOWN_ABOVE = {'controller/node_registry.h', 'controller/modify_admission.h'}

files = []
for root, dirs, names in os.walk(src):
    rel = os.path.relpath(root, src)
    if rel != '.' and (rel.startswith(SKIP) or rel.split('/')[0].startswith('build')):
        dirs[:] = []
        continue
    for n in names:
        if n.endswith(('.c', '.h')):
            files.append(os.path.normpath(os.path.join(rel, n)))
by_base = defaultdict(list)
for f in files:
    by_base[os.path.basename(f)].append(f)

def node(f):
    return f[:-2]  # foo.c and foo.h are one node

edges = defaultdict(set)  # node -> set(node) with reason
why = {}
above = []
for f in files:
    for line in open(os.path.join(src, f), errors='replace'):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        cands = by_base.get(os.path.basename(m.group(1)), [])
        if not cands:
            continue  # generated (csi.pb-c.h) or system
        # prefer a header in the same folder, then the nearest one
        cands = sorted(cands, key=lambda h: (os.path.dirname(h) != os.path.dirname(f), len(h)))
        h = cands[0]
        a, b = node(f), node(h)
        # a module's private header is part of the module: its own includes,
        # and the includes of it, say nothing about which file needs which
        if a.endswith('_internal') or b.endswith('_internal'):
            a = b
        if a != b:
            edges[a].add(b)
            why.setdefault((a, b), 'include ' + os.path.basename(h))
        fd, hd = os.path.dirname(f), os.path.dirname(h)
        if fd != hd and fd.startswith(hd + '/' if hd else ''):
            above.append((f, h))

# symbols: defined and undefined per object file, read with one nm run per
# batch of objects (a process per object took minutes on a loaded machine)
defs, undefs = {}, defaultdict(set)
objects = {}  # object path -> its source, relative to src
for root, dirs, names in os.walk(build):
    for n in names:
        if not n.endswith('.c.o'):
            continue
        p = os.path.join(root, n)
        m = re.search(r'/CMakeFiles/[^/]+\.dir/(.*)\.o$', p)
        d = os.path.relpath(root[:root.index('/CMakeFiles/')], build)
        sf = os.path.normpath(os.path.join(d, m.group(1)))
        if sf.startswith(SKIP) or not os.path.exists(os.path.join(src, sf)):
            continue
        objects[p] = sf
paths = sorted(objects)
for k in range(0, len(paths), 256):
    out = subprocess.run(['nm', '-A'] + paths[k:k + 256], capture_output=True, text=True).stdout
    for l in out.splitlines():
        obj, _, rest = l.partition(': ') if ': ' in l else l.partition(':')
        sf = objects.get(obj)
        parts = rest.split()
        if sf is None:
            continue
        if len(parts) == 3 and parts[1] in 'TDBRCV':
            defs[parts[2]] = sf
        elif len(parts) == 2 and parts[0] == 'U':
            undefs[sf].add(parts[1])
for f, syms in undefs.items():
    for s in syms:
        g = defs.get(s)
        if g and node(g) != node(f):
            edges[node(f)].add(node(g))
            why.setdefault((node(f), node(g)), 'calls ' + s)

# strongly connected components (Tarjan)
index, low, stack, on, comps, i = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(100000)
def sc(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            sc(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: comps.append(sorted(c))
for v in list(edges):
    if v not in index:
        sc(v)

if '--edges' in sys.argv:
    for a in sorted(edges):
        for b in sorted(edges[a]):
            print(f'{a} -> {b}  ({why[(a, b)]})')
bad = 0
for c in comps:
    name = ' <-> '.join(c)
    known = name in KNOWN_CIRCLES or all(n.startswith(tuple(k for k in KNOWN_CIRCLES if k.endswith('/')))
                                         for n in c)
    bad += not known
    print('circle%s:' % (' (known)' if known else ''), name)
    for a in c:
        for b in c:
            if b in edges.get(a, ()):
                print(f'    {a} -> {b}  ({why[(a, b)]})')
for f, h in above:
    known = h in KNOWN_ABOVE
    bad += not known
    print(f'above{" (known)" if known else ""}: {f} includes {h}')
print(f'{len(comps)} circles, {len(above)} includes from a folder above, {bad} not known')
sys.exit(1 if bad else 0)
