"""TT203 data-attribute: a change made through `.data` is invisible to
autograd, so backward silently uses the changed values (pytorch issue 6990).

`Gate.forward` zeroes a sigmoid's output through `.data`. Sigmoid's
backward reuses its output (grad = y * (1 - y)), so the weight's gradient
comes out as [0, 0] instead of the [0.149, 0.298] of the recorded graph,
with no error.

Run it, then `torchtrap check --fix --unsafe-fixes examples/tt203_data_attribute.py`
(it rewrites the change as `with torch.no_grad(): y.zero_()`) and run it
again: autograd now sees the change and refuses to compute the wrong
gradient ("RESULT: ok" means: no silently wrong gradient).
"""

import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1, bias=False)
        nn.init.constant_(self.fc.weight, 0.5)

    def forward(self, x):
        y = self.fc(x).sigmoid()
        y.data.zero_()
        return y


def main():
    x = torch.tensor([[1.0, 2.0]])
    gate = Gate()
    y = torch.sigmoid(x @ gate.fc.weight.detach().T)
    recorded = (y * (1 - y) * x).flatten()
    print(f"gradient of the recorded graph: {[round(v, 3) for v in recorded.tolist()]}")
    try:
        gate(x).sum().backward()
    except RuntimeError as err:
        print(f"backward: RuntimeError: {str(err).split(':')[0]}")
        print("RESULT: ok")
        return
    grad = gate.fc.weight.grad.flatten()
    print(f"gradient after the change through .data: {grad.tolist()}")
    print("RESULT: ok" if torch.allclose(grad, recorded) else "RESULT: bug")


if __name__ == "__main__":
    main()
