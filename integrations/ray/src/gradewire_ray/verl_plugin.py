"""A veRL plugin module: importing it makes veRL's ``Tracking`` log gradewire's rewards.

veRL imports the modules named in ``VERL_USE_EXTERNAL_MODULES`` in every process that
imports it, the trainer's included; so launching veRL with
``VERL_USE_EXTERNAL_MODULES=gradewire_ray.verl_plugin`` is all the trainer side needs.
Importing this module calls `gradewire_ray.install_verl_hook` (that is its only
purpose; ``import gradewire_ray`` itself changes nothing).
"""

from gradewire_ray._verl_tracking import install_verl_hook

install_verl_hook()
