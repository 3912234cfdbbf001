"""The rule registry: one line per rule."""

from __future__ import annotations

from torchtrap.rules.base import Context, Invalid, Rule, Valid
from torchtrap.rules.tt101_stored_rng_in_dataset import StoredRngInDataset
from torchtrap.rules.tt102_numpy_global_rng_legacy_torch import NumpyGlobalRngLegacyTorch
from torchtrap.rules.tt103_cuda_tensor_in_dataset import CudaTensorInDataset
from torchtrap.rules.tt104_cuda_state_pickled_into_workers import CudaStatePickledIntoWorkers
from torchtrap.rules.tt105_iterable_dataset_not_sharded import IterableDatasetNotSharded
from torchtrap.rules.tt106_workers_without_main_guard import WorkersWithoutMainGuard
from torchtrap.rules.tt107_python_objects_in_worker_dataset import PythonObjectsInWorkerDataset
from torchtrap.rules.tt108_sampler_without_set_epoch import SamplerWithoutSetEpoch
from torchtrap.rules.tt201_log_of_probability import LogOfProbability
from torchtrap.rules.tt202_discarded_out_of_place_result import DiscardedOutOfPlaceResult
from torchtrap.rules.tt203_data_attribute import DataAttribute
from torchtrap.rules.tt204_hook_in_forward import HookInForward
from torchtrap.rules.tt205_non_full_backward_hook import NonFullBackwardHook
from torchtrap.rules.tt206_unregistered_tensor_attribute import UnregisteredTensorAttribute
from torchtrap.rules.tt207_missing_eval import MissingEval
from torchtrap.rules.tt208_iterator_next_method import IteratorNextMethod
from torchtrap.rules.tt209_numpy_removed_alias import NumpyRemovedAlias
from torchtrap.rules.tt210_autograd_variable import AutogradVariable
from torchtrap.rules.tt211_len_loader_as_sample_count import LenLoaderAsSampleCount
from torchtrap.rules.tt212_dropout_ignores_eval import DropoutIgnoresEval
from torchtrap.rules.tt213_double_normalised_loss import DoubleNormalisedLoss
from torchtrap.rules.tt214_loss_kept_with_graph import LossKeptWithGraph
from torchtrap.rules.tt215_missing_zero_grad import MissingZeroGrad
from torchtrap.rules.tt216_train_mode_not_restored import TrainModeNotRestored
from torchtrap.rules.tt217_clip_scaled_gradients import ClipScaledGradients
from torchtrap.rules.tt218_unregistered_submodules import UnregisteredSubmodules
from torchtrap.rules.tt219_unsafe_torch_load import UnsafeTorchLoad
from torchtrap.rules.tt220_method_not_called import MethodNotCalled
from torchtrap.rules.tt221_misspelled_grad_flag import MisspelledGradFlag
from torchtrap.rules.tt222_parameter_lost_by_move import ParameterLostByMove
from torchtrap.rules.tt223_ignored_partial_load import IgnoredPartialLoad
from torchtrap.rules.tt224_constant_reseed_per_sample import ConstantReseedPerSample
from torchtrap.rules.tt225_uninitialised_tensor import UninitialisedTensor
from torchtrap.rules.tt226_clip_outside_step import ClipOutsideStep
from torchtrap.rules.tt227_grad_mode_not_entered import GradModeNotEntered

ALL_RULES: list[type[Rule]] = [
    StoredRngInDataset,
    NumpyGlobalRngLegacyTorch,
    CudaTensorInDataset,
    CudaStatePickledIntoWorkers,
    IterableDatasetNotSharded,
    WorkersWithoutMainGuard,
    PythonObjectsInWorkerDataset,
    SamplerWithoutSetEpoch,
    LogOfProbability,
    DiscardedOutOfPlaceResult,
    DataAttribute,
    HookInForward,
    NonFullBackwardHook,
    UnregisteredTensorAttribute,
    MissingEval,
    IteratorNextMethod,
    NumpyRemovedAlias,
    AutogradVariable,
    LenLoaderAsSampleCount,
    DropoutIgnoresEval,
    DoubleNormalisedLoss,
    LossKeptWithGraph,
    MissingZeroGrad,
    TrainModeNotRestored,
    ClipScaledGradients,
    UnregisteredSubmodules,
    UnsafeTorchLoad,
    MethodNotCalled,
    MisspelledGradFlag,
    ParameterLostByMove,
    IgnoredPartialLoad,
    ConstantReseedPerSample,
    UninitialisedTensor,
    ClipOutsideStep,
    GradModeNotEntered,
]

RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}


def get_rule(code_or_name: str) -> type[Rule] | None:
    key = code_or_name.strip()
    rule = RULES_BY_CODE.get(key.upper())
    if rule is None:
        rule = next((r for r in ALL_RULES if r.name == key.lower()), None)
    return rule


__all__ = ["ALL_RULES", "RULES_BY_CODE", "Context", "Invalid", "Rule", "Valid", "get_rule"]
