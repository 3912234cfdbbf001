"""TT201 log-of-probability: `torch.log(torch.softmax(x, -1))` turns an
underflowed probability into -inf, and the gradient into NaN.

Logits [[0, 120]] with target 0: softmax gives class 0 a probability of
exp(-120), which is 0 in float32. The hand-written negative log-likelihood is
then inf and its gradient NaN; `log_softmax` gives 120.0 (what
`F.cross_entropy` gives) with a finite gradient.

Run it, then `torchtrap check --fix examples/tt201_log_of_softmax.py` and run
it again.
"""

import torch


def nll(x, target):
    return -torch.log(torch.softmax(x, -1))[0, target]


def main():
    logits = torch.tensor([[0.0, 120.0]], requires_grad=True)
    loss = nll(logits, 0)
    loss.backward()
    reference = torch.nn.functional.cross_entropy(logits.detach(), torch.tensor([0]))
    print(f"loss: {loss.item()}  (cross_entropy: {reference.item()})")
    print(f"grad: {logits.grad.tolist()}")
    ok = bool(torch.isfinite(loss)) and bool(torch.isfinite(logits.grad).all())
    print("RESULT: ok" if ok else "RESULT: bug")


if __name__ == "__main__":
    main()
