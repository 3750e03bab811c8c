#!/usr/bin/env python3
"""Per-op self time from a libtorch profiler Chrome trace.

  python3 tests/bench/profile_summary.py TRACE.json [--top N]

The trace (port_forward_cli run ... --profile TRACE.json) nests ops:
aten::linear contains aten::matmul contains aten::mm. Summing inclusive
times would count the matmul three times, so each op is charged only the
time not spent in the ops it called (its self time), per thread.

The profiler times ops on the host. On a GPU, kernels run asynchronously,
so a trace taken there says where the time goes only when every launch
waits for its kernel (CUDA_LAUNCH_BLOCKING=1, as vs_upstream.py --profile
runs it): each op's time is then its kernels' plus a launch's overhead.
"""
import argparse
import collections
import json


def self_times(trace_path):
    """Returns (self microseconds per op, calls per op, microseconds of the top-level ops)."""
    with open(trace_path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = collections.defaultdict(list)  # tid -> [(start, end, name)]
    for e in events:
        if e.get("ph") == "X":
            spans[e.get("tid")].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"]))
    self_us = collections.Counter()
    calls = collections.Counter()
    total_us = 0.0
    for tid, items in spans.items():
        # Parents start first and end last; sort so each span follows its parent.
        items.sort(key=lambda s: (s[0], -s[1]))
        stack = []  # [start, end, name, child_time]

        def close(frame):
            self_us[frame[2]] += (frame[1] - frame[0]) - frame[3]
        for start, end, name in items:
            while stack and stack[-1][1] <= start:
                close(stack.pop())
            if stack:
                stack[-1][3] += end - start
            else:
                total_us += end - start
            calls[name] += 1
            stack.append([start, end, name, 0.0])
        while stack:
            close(stack.pop())
    return self_us, calls, total_us


def summary_lines(trace_path, top=25):
    """The table main() prints, as lines."""
    self_us, calls, total_us = self_times(trace_path)
    lines = [f"{'op':40s} {'calls':>7s} {'self ms':>10s} {'share':>7s}"]
    for name, us in self_us.most_common(top):
        lines.append(f"{name:40s} {calls[name]:7d} {us / 1000:10.2f} {100 * us / max(total_us, 1):6.1f}%")
    lines.append(f"{'total (top-level ops)':40s} {'':7s} {total_us / 1000:10.2f}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    print("\n".join(summary_lines(args.trace, args.top)))


if __name__ == "__main__":
    main()
