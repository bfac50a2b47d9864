# Sourced ON the GPU machine by the bench/device scripts, with R set to the repository root and
# .gl and .devrun carried: installs the Vulkan loader and the GL dispatch libraries NVIDIA's
# driver needs, points the loader at the driver's ICD, and puts .devrun/lib on the library path.
for f in .gl/*.deb; do dpkg -x "$f" /; done  # the Vulkan loader and the GL dispatch libraries the driver needs
ldconfig
# The NVIDIA driver's Vulkan ICD is mounted with the driver, outside the loader's search path.
icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json /usr/share/vulkan/icd.d/nvidia_icd*.json \
  /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -n 1)
[ -n "$icd" ] || icd=$(find / -xdev -name 'nvidia_icd*.json' 2>/dev/null | head -n 1)
echo "Vulkan ICD: ${icd:-none found}"
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd
[ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] &&
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$R/.devrun/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
