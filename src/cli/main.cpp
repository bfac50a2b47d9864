#include <cstdio>
int main() { std::puts("channel: CLI under construction"); return 1; }
