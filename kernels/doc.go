// Package kernels holds the CPU compute kernels of the inference engine.
package kernels
