#!/usr/bin/env python3
"""Scrapes Stria daemons' /metrics and parses them with prometheus_client's text parser
(python3-prometheus-client).

  metrics_scrape.py URL
      prints one `NAME{k="v",...} VALUE` line per sample, labels sorted, so a test can check
      values exactly. Exit 1 when the page does not parse.
  metrics_scrape.py --dashboard DASHBOARD.json URL...
      checks that the Grafana dashboard is valid JSON and that every stria_* metric its
      queries name is a sample name on at least one of the pages; prints the missing ones
      and exits 1 when any is missing."""
import json
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def samples(url):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    for family in text_string_to_metric_families(text):
        yield from family.samples


def dashboard_metrics(path):
    """The stria_* names in every query (targets' expr, template variables) of a dashboard."""
    with open(path) as f:
        dash = json.load(f)
    queries = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expr", "definition", "query") and isinstance(value, str):
                    queries.append(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(dash)
    return {name for q in queries for name in re.findall(r"\bstria_[a-z0-9_]+", q)}


def main(argv):
    if len(argv) >= 3 and argv[0] == "--dashboard":
        wanted = dashboard_metrics(argv[1])
        if not wanted:
            print(f"{argv[1]}: no stria_* metric in any query", file=sys.stderr)
            return 1
        exported = {s.name for url in argv[2:] for s in samples(url)}
        missing = sorted(wanted - exported)
        for name in missing:
            print(f"{argv[1]}: {name} is not on any scraped page", file=sys.stderr)
        print(f"{len(wanted)} metrics queried, {len(wanted) - len(missing)} exported")
        return 1 if missing else 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for s in samples(argv[0]):
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
