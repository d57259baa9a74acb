"""``DataArray.argmax(dim=...)`` on the GPU for a Dask-backed xarray DataArray.

    python examples/xarray_argmax.py

xarray reduces a Dask-backed DataArray with ``dask.array``'s functions (``argmax``, or
``nanargmax`` where it skips NaN, its default for floats). ``dmlgpu.dask.numpy`` has the same
functions with the same signatures and answers, run on GPUs, so ``xarray.apply_ufunc`` with
them gives what ``DataArray.argmax(dim=...)`` gives: the same values, dtype (int64), dims,
coordinates, name and attributes, lazily, with the same chunks. ``gpu_argmax`` below is the
whole recipe; ``main`` checks it against xarray's own on a small (time, lat, lon) cube.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

import dmlgpu.dask.numpy as ddn


def gpu_argmax(array: xr.DataArray, dim, *, skipna: bool | None = None):
    """As ``array.argmax(dim=dim, skipna=skipna)`` for a Dask-backed DataArray, on GPUs.

    ``dim``: a dimension name (a DataArray of indices along it comes back) or a list of them
    (a dict of index DataArrays by dimension, as xarray gives: the flat index over those
    dimensions, from ``dmlgpu.dask.numpy``'s tuple ``axis``, unravelled lazily). ``skipna``:
    skip NaN (``nanargmax``, where a slice of nothing but NaN raises ``ValueError`` at
    ``compute()``), by default for float data, as xarray does.
    """
    dims = [dim] if isinstance(dim, str) else list(dim)
    skip = array.dtype.kind == "f" if skipna is None else skipna
    function = ddn.nanargmax if skip else ddn.argmax
    # apply_ufunc moves the core dimensions last; the function reduces them and drops them
    flat = xr.apply_ufunc(function, array, input_core_dims=[dims], kwargs={"axis": tuple(range(-len(dims), 0))},
                          dask="allowed")
    if isinstance(dim, str):
        return flat
    found = {}
    with xr.set_options(keep_attrs=True):  # as xarray's own result keeps the name and attributes
        for name in reversed(dims):
            found[name], flat = flat % array.sizes[name], flat // array.sizes[name]
    return {name: found[name] for name in dims}


def main() -> None:
    rng = np.random.default_rng(0)
    hours, lat, lon = 96, 12, 16
    temperature = xr.DataArray(
        (260 + 40 * rng.random((hours, lat, lon))).astype(np.float32),
        dims=("time", "lat", "lon"), name="t2m", attrs={"units": "K"},
        coords={"time": np.arange(hours), "lat": np.linspace(-55, 55, lat), "lon": np.arange(lon) * 22.5})
    temperature[5:9, 2, 3] = np.nan  # gaps in the record: skipped, as xarray skips them
    cube = temperature.chunk({"time": 24, "lat": 6})  # Dask-backed: chunks split the reduced axis

    hottest = gpu_argmax(cube, "time")  # lazy, like cube.argmax(dim="time")
    xr.testing.assert_identical(hottest.compute(), cube.argmax(dim="time").compute())
    assert hottest.chunks == cube.argmax(dim="time").chunks
    print(f"hottest hour at each of {lat * lon} places: the same as xarray's own, {hottest.dtype} {hottest.dims}")

    where = gpu_argmax(cube, ["time", "lon"])  # a dict, like cube.argmax(dim=["time", "lon"])
    theirs = cube.argmax(dim=["time", "lon"])
    for name in theirs:
        xr.testing.assert_identical(where[name].compute(), theirs[name].compute())
    warmest_lat = gpu_argmax(cube.fillna(300), "lat", skipna=False)  # argmax, NaN not skipped
    xr.testing.assert_identical(warmest_lat.compute(), cube.fillna(300).argmax(dim="lat", skipna=False).compute())
    print(f"over (time, lon), and with skipna=False: the same as xarray's own; first place: "
          f"hour {int(where['time'][0])}, longitude {float(cube.lon[int(where['lon'][0])])}")


if __name__ == "__main__":
    main()
