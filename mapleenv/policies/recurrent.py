"""Run an ``nn.LSTM`` over ``[T, B]`` sequences whose episodes may start mid-sequence.

Each column is cut at its episode starts into segments; the segments are padded into one
``[L, S]`` batch, packed, and sent through the LSTM in a single call. The first segment of a
column starts from the given state (zeroed if it is an episode start); every other segment
starts from zeros. Outputs are scattered back to ``[T, B]``, and the returned state is the
final state of each column's last segment: exactly what stepping one step at a time, zeroing
the state at every episode start, would give.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

Hidden = tuple[torch.Tensor, ...]


def zero_state(layers: int, batch: int, size: int, device: torch.device | str = "cpu") -> Hidden:
    """A zero LSTM state ``(h, c)``, each ``[layers, batch, size]``."""
    shape = (layers, batch, size)
    return (torch.zeros(shape, device=device), torch.zeros(shape, device=device))


def mask_hidden(hidden: Hidden, episode_start: torch.Tensor) -> Hidden:
    """Zero the state of envs whose episode starts: ``h * (1 - episode_start)`` per env."""
    keep = (1.0 - episode_start.to(hidden[0].dtype)).view(1, -1, 1) if hidden else None
    return tuple(x * keep for x in hidden)


def run_lstm(
    lstm: nn.LSTM, x: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
) -> tuple[torch.Tensor, Hidden]:
    """Run ``lstm`` over ``x`` ``[T, B, E]`` from ``hidden`` (h, c ``[layers, B, H]``).

    ``episode_start`` ``[T, B]`` marks steps whose input is the first of an episode; the
    state is reset to zeros before such a step. Returns outputs ``[T, B, H]`` and the final
    state.
    """
    steps, batch = episode_start.shape
    starts = episode_start.bool()
    h0, c0 = mask_hidden(hidden, starts[0])
    if steps == 1 or not bool(starts[1:].any()):
        out, (h, c) = lstm(x, (h0, c0))
        return out, (h, c)

    # Segment bookkeeping in column-major order (one column = one env/chunk).
    seg_start = starts.clone()
    seg_start[0] = True
    flat_start = seg_start.t().reshape(-1)  # [B*T], column by column
    seg_id = torch.cumsum(flat_start.long(), 0) - 1  # segment of every step
    num_segments = int(seg_id[-1].item()) + 1
    flat_idx = torch.arange(flat_start.numel(), device=x.device)
    first_idx = flat_idx[flat_start]  # flat index where each segment starts
    pos = flat_idx - first_idx[seg_id]  # position of every step inside its segment
    lengths = torch.bincount(seg_id, minlength=num_segments)
    max_len = int(lengths.max().item())

    x_flat = x.transpose(0, 1).reshape(batch * steps, -1)
    padded = x.new_zeros(max_len, num_segments, x.shape[-1])
    padded[pos, seg_id] = x_flat

    # Initial state: the given state for each column's first segment, zeros elsewhere.
    col_first_seg = seg_id[torch.arange(batch, device=x.device) * steps]
    seg_h0 = h0.new_zeros(h0.shape[0], num_segments, h0.shape[2])
    seg_c0 = c0.new_zeros(c0.shape[0], num_segments, c0.shape[2])
    seg_h0[:, col_first_seg] = h0
    seg_c0[:, col_first_seg] = c0

    packed = pack_padded_sequence(padded, lengths.cpu(), enforce_sorted=False)
    packed_out, (h_n, c_n) = lstm(packed, (seg_h0, seg_c0))
    out_padded, _ = pad_packed_sequence(packed_out, total_length=max_len)
    out = out_padded[pos, seg_id].view(batch, steps, -1).transpose(0, 1)

    col_last_seg = torch.cat([col_first_seg[1:] - 1, col_first_seg.new_tensor([num_segments - 1])])
    return out, (h_n[:, col_last_seg], c_n[:, col_last_seg])
