// Workgroup-wide sums and maxima for any subgroup size: subgroup reduction, then one value per
// subgroup through shared memory. Every invocation of the workgroup must call them (barriers).
// Needs: specialization constant MAX_SUBGROUPS (workgroup size / smallest subgroup size).
shared float reduce_scratch[MAX_SUBGROUPS];

float workgroup_sum(float value) {
  const float s = subgroupAdd(value);
  if (subgroupElect()) reduce_scratch[gl_SubgroupID] = s;
  barrier();
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += reduce_scratch[i];
  barrier();  // the scratch is free again for the next reduction
  return total;
}

float workgroup_max(float value) {
  const float m = subgroupMax(value);
  if (subgroupElect()) reduce_scratch[gl_SubgroupID] = m;
  barrier();
  float result = reduce_scratch[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) result = max(result, reduce_scratch[i]);
  barrier();
  return result;
}

// RMSNorm's scale 1 / sqrt(mean(x^2) + eps) as the CPU backend computes it (ops.cpp rms_norm,
// after ggml): squares of f32 values summed in double, the mean rounded to f32, then an exactly
// rounded square root and division (Vulkan's sqrt and division may be off by ulps, which would
// move every normalized value, and with it the int8 activations downstream). Needs shaderFloat64.
shared double reduce_scratch_f64[MAX_SUBGROUPS];

double workgroup_sum_f64(double value) {
  const double s = subgroupAdd(value);
  if (subgroupElect()) reduce_scratch_f64[gl_SubgroupID] = s;
  barrier();
  double total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += reduce_scratch_f64[i];
  barrier();
  return total;
}

// sqrt(a) rounded to nearest for a finite a > 0: the float estimate refined by a Newton step in
// double (error far below half an f32 ulp), then rounded once.
float sqrt_rn(float a) {
  const double estimate = double(sqrt(a));
  const double refined = estimate + (double(a) - estimate * estimate) / (2.0 * estimate);
  return float(refined);
}

float rms_scale(double sum_of_squares, uint n, float eps) {
  const float mean = float(sum_of_squares / double(n));
  return div_rn(1.0, sqrt_rn(mean + eps));
}
