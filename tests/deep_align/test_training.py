import torch

from icml24.deep_align.encoder import DeepAlignNet, EncoderConfig
from icml24.deep_align.evaluation import forward
from icml24.deep_align.permutations import invert, perm_matrices, permute_hard, random_perms
from icml24.deep_align.training import (
    TrainConfig,
    augment,
    fit,
    permutation_accuracy,
    reconstruction_loss,
    row_quantile,
    supervised_loss,
)
from icml24.deep_align.weights import WeightBatch
from icml24.threads import single_thread

WIDTHS = (6, 5, 4, 3)


def random_batch(B, seed, widths=WIDTHS):
    g = torch.Generator().manual_seed(seed)
    return WeightBatch(
        tuple(torch.randn(B, widths[k], widths[k + 1], generator=g) for k in range(len(widths) - 1)),
        tuple(torch.randn(B, widths[k + 1], generator=g) for k in range(len(widths) - 1)),
    )


def test_positive_rescaling_alone_keeps_the_function():
    wb = random_batch(3, 0)
    aug = augment(wb, torch.Generator().manual_seed(1), noise_scale=0, drop_rate=0, pos_scale=0.1, quantile_dropout=0)
    x = torch.randn(8, 6)
    assert not torch.equal(aug.weights[0], wb.weights[0])
    assert torch.allclose(forward(aug, x), forward(wb, x), atol=1e-5)


def test_quantile_dropout_zeroes_at_most_the_quantile():
    wb = random_batch(4, 2)
    aug = augment(wb, torch.Generator().manual_seed(3), noise_scale=0, drop_rate=0, pos_scale=0, quantile_dropout=0.3)
    zeros = (aug.flat() == 0).float().mean(1)
    assert (zeros <= 0.3 + 1.0 / wb.flat().shape[1]).all()
    kept = aug.flat() != 0
    assert torch.equal(aug.flat()[kept], wb.flat()[kept])


def test_row_quantile_matches_torch_quantile():
    v = torch.randn(5, 37, generator=torch.Generator().manual_seed(4))
    q = torch.rand(5, generator=torch.Generator().manual_seed(5))
    expected = torch.stack([torch.quantile(v[i], q[i]) for i in range(5)])
    assert torch.allclose(row_quantile(v, q), expected, atol=1e-6)


def test_loss_conventions_on_known_permutations():
    a = random_batch(2, 6)
    pi = random_perms(a.hidden, 2, torch.Generator().manual_seed(7))
    pa = permute_hard(a, pi)
    # perfect scores for (a, pa): row r of S matches column c when pa's neuron c is a's neuron r, i.e. r = pi[c]
    scores = [50.0 * perm_matrices(invert([p]))[0] for p in pi]
    assert float(supervised_loss(scores, pi)) < 1e-6
    wrong = [50.0 * perm_matrices([p])[0] for p in pi]
    assert float(supervised_loss(wrong, pi)) > 1.0 or all(torch.equal(p, invert([p])[0]) for p in pi)
    # aligning pa back to a with the inverse permutation reconstructs a exactly
    lmc, l2 = reconstruction_loss(
        a, pa, perm_matrices(invert(pi)), torch.randn(4, 6), torch.zeros(4, dtype=torch.long), torch.full((2,), 0.5)
    )
    assert float(l2) < 1e-10
    assert permutation_accuracy(invert(pi), invert(pi)) == 1.0


def tiny_fit(seed):
    model = DeepAlignNet(
        WIDTHS,
        EncoderConfig(hidden=8, n_hidden=1, output_features=8, set_layer="ds", input_dim_downsample=4),
        seed=seed,
    )
    nets = random_batch(6, 8)
    x, y = torch.randn(20, 6, generator=torch.Generator().manual_seed(9)), torch.arange(20) % 3
    with single_thread():
        hist = fit(
            model,
            nets,
            x,
            y,
            TrainConfig(steps=4, batch_size=3, image_batch_size=5, eval_every=2, lr=1e-2),
            val=random_batch(3, 10),
            seed=seed,
        )
    return model, hist


def test_fit_is_reproducible_and_selects_on_validation():
    m1, h1 = tiny_fit(0)
    m2, h2 = tiny_fit(0)
    assert [s["loss"] for s in h1.steps] == [s["loss"] for s in h2.steps]
    assert all(torch.equal(p, q) for p, q in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert len(h1.evals) == 2 and h1.best_step in (2, 4)
    assert h1.best_step == min(h1.evals, key=lambda e: (e["recon"], -e["step"]))["step"]
    assert not m1.training
