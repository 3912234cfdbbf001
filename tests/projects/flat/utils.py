import random

import numpy as np
import torch
from torch.utils.data import get_worker_info


def reseed_dataset(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def seed_globals(worker_id):
    random.seed(worker_id)
    np.random.seed(worker_id)


def probs(logits):
    return torch.sigmoid(logits)


def safe_probs(logits):
    return torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6)
