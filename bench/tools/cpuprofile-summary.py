#!/usr/bin/env python3
"""Self time of a V8 .cpuprofile grouped by package (node_modules/<pkg>), our folders, node internals and GC.

Usage: bench/tools/cpuprofile-summary.py <file.cpuprofile> [top-functions]
"""
import json
import re
import sys
from collections import Counter


def group(url: str, name: str) -> str:
    if not url:
        return name if name.startswith('(') else '(native/other)'
    m = re.search(r'node_modules/((?:@[^/]+/)?[^/]+)', url)
    if m:
        return m.group(1)
    m = re.search(r'/(src|workflows|activities|bench|test)/', url)
    if m:
        return f'ours:{m.group(1)}'
    if url.startswith('node:'):
        return 'node:' + url[5:].split('/')[0]
    return url.split('/')[-1]


def main() -> None:
    profile = json.load(open(sys.argv[1]))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    nodes = {n['id']: n for n in profile['nodes']}
    self_us = Counter()
    for sample, delta in zip(profile['samples'], profile['timeDeltas']):
        self_us[sample] += delta
    total = sum(self_us.values())
    by_group = Counter()
    by_fn = Counter()
    for node_id, us in self_us.items():
        frame = nodes[node_id]['callFrame']
        g = group(frame.get('url', ''), frame.get('functionName', ''))
        by_group[g] += us
        by_fn[f"{g} {frame.get('functionName') or '(anonymous)'}:{frame.get('lineNumber')}"] += us
    idle = by_group.get('(idle)', 0)
    busy = total - idle
    print(f'{sys.argv[1]}: {total / 1e6:.1f} s sampled, {busy / 1e6:.1f} s busy')
    for g, us in by_group.most_common(25):
        if g == '(idle)':
            continue
        print(f'  {us / 1e6:7.2f} s  {100 * us / max(busy, 1):5.1f} %  {g}')
    if top:
        print('  top functions:')
        for f, us in by_fn.most_common(top):
            if f.startswith('(idle)'):
                continue
            print(f'    {us / 1e6:7.2f} s  {f}')


main()
