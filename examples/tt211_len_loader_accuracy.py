"""TT211 len-loader-as-sample-count: seed 003 §6 notes that `len(loader)` is
the number of batches, `ceil(len(dataset) / batch_size)`. Dividing a count
of correct samples by it inflates the accuracy by about the batch size.

64 samples with labels 0, 1, 0, 1, ... and a "model" that always predicts 0:
32 of 64 are right, a true accuracy of 50%. At batch_size=32 the loader has
2 batches, so `100 * correct / len(test_loader)` reports 1600%. Divided by
`len(test_loader.dataset)` it reports 50%.

Run it, then `torchtrap check --fix examples/tt211_len_loader_accuracy.py`
and run it again.
"""

import torch
from torch.utils.data import DataLoader, TensorDataset


def predict_zero(x):
    return torch.zeros(len(x), dtype=torch.long)


def evaluate(model, test_loader):
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            pred = model(data)
            correct += (pred == target).sum().item()
    return 100.0 * correct / len(test_loader)


def main():
    x = torch.arange(64, dtype=torch.float32)
    y = torch.arange(64) % 2
    dataset = TensorDataset(x, y)
    test_loader = DataLoader(dataset, batch_size=32)
    reported = evaluate(predict_zero, test_loader)
    true = 100.0 * (predict_zero(x) == y).float().mean().item()
    print(f"batches: {len(test_loader)}, samples: {len(dataset)}")
    print(f"reported accuracy: {reported:.1f}%")
    print(f"true accuracy: {true:.1f}%")
    print("RESULT: ok" if abs(reported - true) < 1e-9 else "RESULT: bug")


if __name__ == "__main__":
    main()
