"""Numerical exploration of the paper's open problem (deep compositions of ReLU/GELU
residual blocks). Everything here is *numerical evidence, not a verdict*."""

from absorb.explore.depth import DepthReport, FitResult, explore_depth, kink_rays_2d

__all__ = ["DepthReport", "FitResult", "explore_depth", "kink_rays_2d"]
