"""TT202 discarded-out-of-place-result: seed 003's focal loss clamps `prob`
with `prob.clamp(...)` and throws the result away, so `prob` keeps its zeros
and the log that follows is -inf.

Logits [[0, 120, 0]] with target 0: softmax gives class 0 a probability of
exp(-120), which is 0 in float32. The clamp on its own line changes nothing:
the smallest probability is still 0 and the loss is inf. Assigned back
(`prob = prob.clamp(...)`), the smallest probability is 1e-4 and the loss is
finite.

Run it, then `torchtrap check --fix examples/tt202_discarded_clamp.py` and run
it again.
"""

import torch
import torch.nn as nn


class FocalLoss(nn.Module):
    def __init__(self, class_num, gamma=2.0):
        super().__init__()
        self.class_num = class_num
        self.gamma = gamma
        self.softmax = nn.Softmax(dim=1)

    def forward(self, pred, target):
        prob = self.softmax(pred.view(-1, self.class_num))
        prob.clamp(min=0.0001, max=1.0)
        self.smallest = prob.min().item()
        p_t = prob.gather(1, target.view(-1, 1)).squeeze(1)
        return (-((1 - p_t) ** self.gamma) * p_t.log()).mean()


def main():
    pred = torch.tensor([[0.0, 120.0, 0.0]])
    target = torch.tensor([0])
    criterion = FocalLoss(class_num=3)
    loss = criterion(pred, target)
    print(f"smallest probability after the clamp line: {criterion.smallest}")
    print(f"focal loss: {loss.item()}")
    ok = criterion.smallest > 0 and bool(torch.isfinite(loss))
    print("RESULT: ok" if ok else "RESULT: bug")


if __name__ == "__main__":
    main()
