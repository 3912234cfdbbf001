"""TT214 loss-kept-with-graph: `total_loss += loss` adds tensors that carry an
autograd graph, so the running total links every iteration's graph into one
and nothing of it can be freed: memory grows with every step until the
process is killed.

2,000 training steps of a small MLP on CPU: the total keeps thousands of
graph nodes alive and the process grows by megabytes; with `.detach()` (or
`.item()`) no graph node survives and the memory stays flat.

Run it, then `torchtrap check --fix examples/tt214_loss_kept_with_graph.py`
(it adds `.detach()`: the total is also passed to `graph_nodes`, so `.item()`
is offered only where the total is just printed or logged) and run it again.
"""

import torch
import torch.nn as nn

STEPS = 2000


def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def graph_nodes(value):
    """How many autograd nodes `value` keeps reachable."""
    seen, todo = set(), [getattr(value, "grad_fn", None)]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(next_fn for next_fn, _ in node.next_functions)
    return len(seen)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randn(64, 1)

    total_loss = 0.0
    start = None
    for step in range(STEPS):
        if step == 200:
            start = resident_mb()
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    growth = resident_mb() - start

    nodes = graph_nodes(total_loss)
    print(f"autograd nodes kept alive by total_loss after {STEPS} steps: {nodes}")
    print(f"memory growth over the last {STEPS - 200} steps: {growth:.1f} MB")
    print(f"mean loss: {total_loss / STEPS:.4f}")
    print("RESULT: ok" if nodes == 0 else "RESULT: bug")


if __name__ == "__main__":
    main()
