"""``weft.nn``: neural network layers, losses and initializers on weft.core,
with ``mlx.nn``'s API (``import weft.nn as nn``)."""

from weft.nn import init, losses
from weft.nn.activations import *  # noqa: F401,F403
from weft.nn.layers import *  # noqa: F401,F403
from weft.nn.layers import (
    CELU, ELU, GELU, GLU, SELU, ALiBi, BatchNorm, Bilinear, Dropout, Dropout2d, Dropout3d, Embedding, GroupNorm,
    HardShrink, Hardswish, HardTanh, Identity, InstanceNorm, LayerNorm, LeakyReLU, Linear, LogSigmoid, LogSoftmax,
    Mish, MultiHeadAttention, PReLU, ReLU, ReLU6, RMSNorm, RoPE, Sequential, Sigmoid, SiLU,
    SinusoidalPositionalEncoding, Softmax, Softplus, Softshrink, Softsign, Step, Tanh,
)
from weft.nn.convolution import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from weft.nn.module import Module
from weft.nn.pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from weft.nn.recurrent import GRU, LSTM, RNN
from weft.nn.quantized import QuantizedEmbedding, QuantizedLinear, quantize
from weft.nn.transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from weft.nn.upsample import Upsample
from weft.nn.utils import checkpoint, value_and_grad
