// cfd: teg's own program reproducing Rodinia 3.1 cfd (euler3d, single precision) as measured on
// the Quadro GV100 (hyfiss_gv100_apps.csv, app "cfd", `./euler3d ../../data/cfd/fvcorr.domn.097K`).
// Written from reading src/cuda/rodinia/3.1/cuda/cfd/euler3d.cu and its README
// (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: a cell-centred finite-volume Euler solver on tetrahedra (4 faces per
// element), structure-of-arrays data padded to nelr = 192 * ceil(nel / 192) elements (the padding
// copies the last element's neighbours and area; its normals stay zero, as the published loader
// leaves them), the far-field state and its flux contributions computed in host code and placed in
// __constant__ memory with cudaMemcpyToSymbol. Kernels, grids and blocks as measured (the README's
// block sizes 128 / 192 / 128 / 256): cuda_initialize_variables (nelr/128 blocks of 128) three
// times, then per iteration a device-to-device copy of the state, cuda_compute_step_factor
// (nelr/192 of 192) and three Runge-Kutta steps of cuda_compute_flux (nelr/128 of 128) and
// cuda_time_step (nelr/256 of 256: the last nelr % 256 elements are never updated, as published).
// The flux kernel reads each face's neighbour index and normal, gathers the neighbour's five
// variables for a real neighbour (index >= 0), adds the wall pressure term for a wing face (-1) and
// the far-field flux for a far-field face (-2), with the published arithmetic.
// Differs: the mesh file (fvcorr.domn.097K) is not public. Given a file name, the program reads a
// mesh in the published format; without one it generates a tetrahedral mesh of the same size
// (nel = 97,046, nelr = 97,152): a 40 x 34 x 12 box of cubes, each cut into the 6 tetrahedra
// around its main diagonal, minus a one-cube-thick 29 x 5 "wing" slab (plus 4 tetrahedra of the
// cube at its tip). Wing faces are wall boundaries (-1), the box's outer faces far field (-2).
// Elements are numbered cube by cube (x fastest, then y, then z, the 6 tetrahedra of a cube in
// turn), faces opposite vertices 0..3; the 64 tetrahedra right under the wing whose top face is
// the wing (face 0) are numbered first. With that ordering exactly 5 of the flux kernel's
// (warp, face) pairs have no real neighbour in any lane (warps 0 and 1 at face 0, and the three
// padding warps at the last element's one far-field face), which is what the measured read-request
// count (124,451 = 21 * 3036 + 5 * (12,144 - 5)) says of the real mesh. `--launches N` stops after
// N kernel launches (the measured run is one iteration: 10 launches); `--iterations N` sets the
// iteration count (published: 2000); `--check` compares the final state with a CPU reference
// (relative 1e-3, the GPU's fused multiply-adds and sqrt rounding differ from the CPU's).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define GAMMA 1.4f
#define NDIM 3
#define NNB 4
#define RK 3
#define FF_MACH 1.2f
#define DEG_ANGLE_OF_ATTACK 0.0f
#define PAD_BLOCK 192          // nelr is a multiple of this (the published BLOCK_SIZE_0)
#define BLOCK_INIT 128
#define BLOCK_STEP 192
#define BLOCK_FLUX 128
#define BLOCK_TIME 256
#define VAR_DENSITY 0
#define VAR_MOMENTUM 1
#define VAR_DENSITY_ENERGY (VAR_MOMENTUM + NDIM)
#define NVAR (VAR_DENSITY_ENERGY + 1)

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "cfd: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

__constant__ float ff_variable[NVAR];
__constant__ float3 ff_flux_contribution_momentum_x[1];
__constant__ float3 ff_flux_contribution_momentum_y[1];
__constant__ float3 ff_flux_contribution_momentum_z[1];
__constant__ float3 ff_flux_contribution_density_energy[1];

// ---- the physics, shared by the kernels and the CPU reference --------------------------------------
struct FluxContribution { float3 mx, my, mz, de; };

__device__ __host__ inline FluxContribution flux_contribution(float density_energy, float3 momentum, float pressure,
                                                              float3 velocity)
{
    FluxContribution f;
    f.mx = make_float3(velocity.x * momentum.x + pressure, velocity.x * momentum.y, velocity.x * momentum.z);
    f.my = make_float3(f.mx.y, velocity.y * momentum.y + pressure, velocity.y * momentum.z);
    f.mz = make_float3(f.mx.z, f.my.z, velocity.z * momentum.z + pressure);
    float de_p = density_energy + pressure;
    f.de = make_float3(velocity.x * de_p, velocity.y * de_p, velocity.z * de_p);
    return f;
}

__device__ __host__ inline float3 velocity_of(float density, float3 momentum)
{
    return make_float3(momentum.x / density, momentum.y / density, momentum.z / density);
}

__device__ __host__ inline float speed_sqd_of(float3 v) { return v.x * v.x + v.y * v.y + v.z * v.z; }

__device__ __host__ inline float pressure_of(float density, float density_energy, float speed_sqd)
{
    return (float(GAMMA) - float(1.0f)) * (density_energy - float(0.5f) * density * speed_sqd);
}

__device__ __host__ inline float speed_of_sound_of(float density, float pressure)
{
    return sqrtf(float(GAMMA) * pressure / density);
}

// ---- kernels --------------------------------------------------------------------------------------
__global__ void cuda_initialize_variables(int nelr, float *variables)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    for (int j = 0; j < NVAR; j++) variables[i + j * nelr] = ff_variable[j];
}

__global__ void cuda_compute_step_factor(int nelr, float *variables, float *areas, float *step_factors)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    float density = variables[i + VAR_DENSITY * nelr];
    float3 momentum = make_float3(variables[i + (VAR_MOMENTUM + 0) * nelr], variables[i + (VAR_MOMENTUM + 1) * nelr],
                                  variables[i + (VAR_MOMENTUM + 2) * nelr]);
    float density_energy = variables[i + VAR_DENSITY_ENERGY * nelr];
    float3 velocity = velocity_of(density, momentum);
    float speed_sqd = speed_sqd_of(velocity);
    float pressure = pressure_of(density, density_energy, speed_sqd);
    float speed_of_sound = speed_of_sound_of(density, pressure);
    // 0.5 sqrt(area) / (|v| + c), divided once more by the area for the time step
    step_factors[i] = float(0.5f) / (sqrtf(areas[i]) * (sqrtf(speed_sqd) + speed_of_sound));
}

__global__ void cuda_compute_flux(int nelr, int *elements_surrounding_elements, float *normals, float *variables,
                                  float *fluxes)
{
    const float smoothing_coefficient = float(0.2f);
    const int i = blockDim.x * blockIdx.x + threadIdx.x;

    float density_i = variables[i + VAR_DENSITY * nelr];
    float3 momentum_i = make_float3(variables[i + (VAR_MOMENTUM + 0) * nelr],
                                    variables[i + (VAR_MOMENTUM + 1) * nelr],
                                    variables[i + (VAR_MOMENTUM + 2) * nelr]);
    float density_energy_i = variables[i + VAR_DENSITY_ENERGY * nelr];
    float3 velocity_i = velocity_of(density_i, momentum_i);
    float speed_sqd_i = speed_sqd_of(velocity_i);
    float speed_i = sqrtf(speed_sqd_i);
    float pressure_i = pressure_of(density_i, density_energy_i, speed_sqd_i);
    float speed_of_sound_i = speed_of_sound_of(density_i, pressure_i);
    FluxContribution fc_i = flux_contribution(density_energy_i, momentum_i, pressure_i, velocity_i);

    float flux_density = 0.0f, flux_density_energy = 0.0f;
    float3 flux_momentum = make_float3(0.0f, 0.0f, 0.0f);

#pragma unroll
    for (int j = 0; j < NNB; j++) {
        int nb = elements_surrounding_elements[i + j * nelr];
        float3 normal = make_float3(normals[i + (j + 0 * NNB) * nelr], normals[i + (j + 1 * NNB) * nelr],
                                    normals[i + (j + 2 * NNB) * nelr]);
        float normal_len = sqrtf(normal.x * normal.x + normal.y * normal.y + normal.z * normal.z);
        if (nb >= 0) {   // a real neighbour: central flux plus artificial viscosity
            float density_nb = variables[nb + VAR_DENSITY * nelr];
            float3 momentum_nb = make_float3(variables[nb + (VAR_MOMENTUM + 0) * nelr],
                                             variables[nb + (VAR_MOMENTUM + 1) * nelr],
                                             variables[nb + (VAR_MOMENTUM + 2) * nelr]);
            float density_energy_nb = variables[nb + VAR_DENSITY_ENERGY * nelr];
            float3 velocity_nb = velocity_of(density_nb, momentum_nb);
            float speed_sqd_nb = speed_sqd_of(velocity_nb);
            float pressure_nb = pressure_of(density_nb, density_energy_nb, speed_sqd_nb);
            float speed_of_sound_nb = speed_of_sound_of(density_nb, pressure_nb);
            FluxContribution fc_nb = flux_contribution(density_energy_nb, momentum_nb, pressure_nb, velocity_nb);

            float factor = -normal_len * smoothing_coefficient * float(0.5f) *
                           (speed_i + sqrtf(speed_sqd_nb) + speed_of_sound_i + speed_of_sound_nb);
            flux_density += factor * (density_i - density_nb);
            flux_density_energy += factor * (density_energy_i - density_energy_nb);
            flux_momentum.x += factor * (momentum_i.x - momentum_nb.x);
            flux_momentum.y += factor * (momentum_i.y - momentum_nb.y);
            flux_momentum.z += factor * (momentum_i.z - momentum_nb.z);

            factor = float(0.5f) * normal.x;
            flux_density += factor * (momentum_nb.x + momentum_i.x);
            flux_density_energy += factor * (fc_nb.de.x + fc_i.de.x);
            flux_momentum.x += factor * (fc_nb.mx.x + fc_i.mx.x);
            flux_momentum.y += factor * (fc_nb.my.x + fc_i.my.x);
            flux_momentum.z += factor * (fc_nb.mz.x + fc_i.mz.x);

            factor = float(0.5f) * normal.y;
            flux_density += factor * (momentum_nb.y + momentum_i.y);
            flux_density_energy += factor * (fc_nb.de.y + fc_i.de.y);
            flux_momentum.x += factor * (fc_nb.mx.y + fc_i.mx.y);
            flux_momentum.y += factor * (fc_nb.my.y + fc_i.my.y);
            flux_momentum.z += factor * (fc_nb.mz.y + fc_i.mz.y);

            factor = float(0.5f) * normal.z;
            flux_density += factor * (momentum_nb.z + momentum_i.z);
            flux_density_energy += factor * (fc_nb.de.z + fc_i.de.z);
            flux_momentum.x += factor * (fc_nb.mx.z + fc_i.mx.z);
            flux_momentum.y += factor * (fc_nb.my.z + fc_i.my.z);
            flux_momentum.z += factor * (fc_nb.mz.z + fc_i.mz.z);
        } else if (nb == -1) {   // wing: wall pressure only
            flux_momentum.x += normal.x * pressure_i;
            flux_momentum.y += normal.y * pressure_i;
            flux_momentum.z += normal.z * pressure_i;
        } else if (nb == -2) {   // far field: central flux against the far-field state
            float factor = float(0.5f) * normal.x;
            flux_density += factor * (ff_variable[VAR_MOMENTUM + 0] + momentum_i.x);
            flux_density_energy += factor * (ff_flux_contribution_density_energy[0].x + fc_i.de.x);
            flux_momentum.x += factor * (ff_flux_contribution_momentum_x[0].x + fc_i.mx.x);
            flux_momentum.y += factor * (ff_flux_contribution_momentum_y[0].x + fc_i.my.x);
            flux_momentum.z += factor * (ff_flux_contribution_momentum_z[0].x + fc_i.mz.x);

            factor = float(0.5f) * normal.y;
            flux_density += factor * (ff_variable[VAR_MOMENTUM + 1] + momentum_i.y);
            flux_density_energy += factor * (ff_flux_contribution_density_energy[0].y + fc_i.de.y);
            flux_momentum.x += factor * (ff_flux_contribution_momentum_x[0].y + fc_i.mx.y);
            flux_momentum.y += factor * (ff_flux_contribution_momentum_y[0].y + fc_i.my.y);
            flux_momentum.z += factor * (ff_flux_contribution_momentum_z[0].y + fc_i.mz.y);

            factor = float(0.5f) * normal.z;
            flux_density += factor * (ff_variable[VAR_MOMENTUM + 2] + momentum_i.z);
            flux_density_energy += factor * (ff_flux_contribution_density_energy[0].z + fc_i.de.z);
            flux_momentum.x += factor * (ff_flux_contribution_momentum_x[0].z + fc_i.mx.z);
            flux_momentum.y += factor * (ff_flux_contribution_momentum_y[0].z + fc_i.my.z);
            flux_momentum.z += factor * (ff_flux_contribution_momentum_z[0].z + fc_i.mz.z);
        }
    }
    fluxes[i + VAR_DENSITY * nelr] = flux_density;
    fluxes[i + (VAR_MOMENTUM + 0) * nelr] = flux_momentum.x;
    fluxes[i + (VAR_MOMENTUM + 1) * nelr] = flux_momentum.y;
    fluxes[i + (VAR_MOMENTUM + 2) * nelr] = flux_momentum.z;
    fluxes[i + VAR_DENSITY_ENERGY * nelr] = flux_density_energy;
}

__global__ void cuda_time_step(int j, int nelr, float *old_variables, float *variables, float *step_factors,
                               float *fluxes)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    float factor = step_factors[i] / float(RK + 1 - j);
    variables[i + VAR_DENSITY * nelr] = old_variables[i + VAR_DENSITY * nelr] + factor * fluxes[i + VAR_DENSITY * nelr];
    variables[i + VAR_DENSITY_ENERGY * nelr] =
        old_variables[i + VAR_DENSITY_ENERGY * nelr] + factor * fluxes[i + VAR_DENSITY_ENERGY * nelr];
    for (int m = 0; m < NDIM; m++)
        variables[i + (VAR_MOMENTUM + m) * nelr] =
            old_variables[i + (VAR_MOMENTUM + m) * nelr] + factor * fluxes[i + (VAR_MOMENTUM + m) * nelr];
}

// ---- the mesh -------------------------------------------------------------------------------------
struct Mesh {
    int nel = 0, nelr = 0;
    std::vector<float> areas;     // nelr
    std::vector<int> ese;         // elements_surrounding_elements[i + j * nelr]
    std::vector<float> normals;   // normals[i + (j + k * NNB) * nelr]
};

// Padding as the published loader does it: nelr = 192 * ceil(nel / 192); padded elements copy the
// last element's area and neighbours, their normals stay zero.
static void pad(Mesh &m)
{
    int last = m.nel - 1;
    for (int i = m.nel; i < m.nelr; i++) {
        m.areas[i] = m.areas[last];
        for (int j = 0; j < NNB; j++) m.ese[i + j * m.nelr] = m.ese[last + j * m.nelr];
    }
}

static int padded(int nel) { return PAD_BLOCK * (nel / PAD_BLOCK + std::min(1, nel % PAD_BLOCK)); }

// The published text format: nel, then per element its area and per face the neighbour (1-based;
// 0 = wing, negative = far field) and the three normal components (negated on reading).
static bool read_mesh(const char *path, Mesh &m)
{
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "cfd: %s: cannot open\n", path); return false; }
    if (fscanf(f, "%d", &m.nel) != 1 || m.nel < 1) { fprintf(stderr, "cfd: %s: bad element count\n", path); fclose(f); return false; }
    m.nelr = padded(m.nel);
    m.areas.assign(m.nelr, 0.f);
    m.ese.assign((size_t)m.nelr * NNB, 0);
    m.normals.assign((size_t)m.nelr * NDIM * NNB, 0.f);
    for (int i = 0; i < m.nel; i++) {
        if (fscanf(f, "%f", &m.areas[i]) != 1) goto bad;
        for (int j = 0; j < NNB; j++) {
            int nb;
            if (fscanf(f, "%d", &nb) != 1) goto bad;
            m.ese[i + j * m.nelr] = (nb < 0 ? -1 : nb) - 1;
            for (int k = 0; k < NDIM; k++) {
                float v;
                if (fscanf(f, "%f", &v) != 1) goto bad;
                m.normals[i + (j + k * NNB) * m.nelr] = -v;
            }
        }
        continue;
    bad:
        fprintf(stderr, "cfd: %s: element %d: expected an area and 4 x (neighbour, nx, ny, nz)\n", path, i + 1);
        fclose(f);
        return false;
    }
    fclose(f);
    pad(m);
    return true;
}

// Writes the first nel elements in the published format (the inverse of read_mesh).
static bool write_mesh(const char *path, const Mesh &m)
{
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "cfd: %s: cannot write\n", path); return false; }
    fprintf(f, "%d\n", m.nel);
    for (int i = 0; i < m.nel; i++) {
        fprintf(f, "%.9g", m.areas[i]);
        for (int j = 0; j < NNB; j++) {
            int nb = m.ese[i + j * m.nelr];
            fprintf(f, " %d", nb >= 0 ? nb + 1 : nb == -1 ? 0 : -1);
            for (int k = 0; k < NDIM; k++) fprintf(f, " %.9g", -m.normals[i + (j + k * NNB) * m.nelr]);
        }
        fprintf(f, "\n");
    }
    return fclose(f) == 0;
}

// Generated mesh (see the header): box of NX x NY x NZ unit cubes, 6 tetrahedra per cube (the paths
// from corner 000 to 111 stepping one axis at a time), a wing slab removed.
#define NX 40
#define NY 34
#define NZ 12
#define WX0 4
#define WX1 33
#define WY0 14
#define WY1 19
#define WZ 6
#define LEADING_WING_ELEMENTS 64
static const int PERMS[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

static bool in_wing(int x, int y, int z) { return z == WZ && x >= WX0 && x < WX1 && y >= WY0 && y < WY1; }
// The cube at the wing tip keeps only its first two tetrahedra.
static bool tet_exists(int x, int y, int z, int t)
{
    if (x < 0 || y < 0 || z < 0 || x >= NX || y >= NY || z >= NZ || in_wing(x, y, z)) return false;
    if (x == WX1 && y == (WY0 + WY1) / 2 && z == WZ) return t < 2;
    return true;
}

static void tet_vertices(int x, int y, int z, int t, int v[4][3])
{
    int p[3] = {x, y, z};
    for (int k = 0; k < 4; k++) {
        for (int d = 0; d < 3; d++) v[k][d] = p[d];
        if (k < 3) p[PERMS[t][k]]++;
    }
}

static void generate_mesh(Mesh &m)
{
    // element id of every existing tetrahedron, cube by cube
    std::vector<int> id((size_t)NX * NY * NZ * 6, -1);
    auto key = [](int x, int y, int z, int t) { return (((size_t)z * NY + y) * NX + x) * 6 + t; };
    int n = 0;
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                for (int t = 0; t < 6; t++)
                    if (tet_exists(x, y, z, t)) id[key(x, y, z, t)] = n++;
    m.nel = n;
    m.nelr = padded(n);
    m.areas.assign(m.nelr, 0.f);
    m.ese.assign((size_t)m.nelr * NNB, 0);
    m.normals.assign((size_t)m.nelr * NDIM * NNB, 0.f);

    // Faces: the face opposite vertex f is matched to a neighbour through its three vertices'
    // sorted coordinates (a map from the face's vertex triple to the elements holding it).
    struct FaceRec { long long k; int elem, face; };
    std::vector<FaceRec> faces;
    faces.reserve((size_t)n * 4);
    auto vkey = [](const int *c) { return ((long long)c[2] * (NY + 1) + c[1]) * (NX + 1) + c[0]; };
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                for (int t = 0; t < 6; t++) {
                    int e = id[key(x, y, z, t)];
                    if (e < 0) continue;
                    int v[4][3];
                    tet_vertices(x, y, z, t, v);
                    for (int f = 0; f < 4; f++) {
                        long long k3[3];
                        int c = 0;
                        for (int q = 0; q < 4; q++)
                            if (q != f) k3[c++] = vkey(v[q]);
                        std::sort(k3, k3 + 3);
                        long long nv = (long long)(NX + 1) * (NY + 1) * (NZ + 1);
                        faces.push_back({(k3[0] * nv + k3[1]) * nv + k3[2], e, f});
                    }
                    // volume (1/6 of a unit cube) and outward area-weighted face normals
                    m.areas[e] = 1.0f / 6.0f;
                    for (int f = 0; f < 4; f++) {
                        int a[3][3], c = 0;
                        for (int q = 0; q < 4; q++)
                            if (q != f) { for (int d = 0; d < 3; d++) a[c][d] = v[q][d]; c++; }
                        double u[3], w[3], nrm[3], out[3];
                        for (int d = 0; d < 3; d++) {
                            u[d] = a[1][d] - a[0][d];
                            w[d] = a[2][d] - a[0][d];
                            out[d] = a[0][d] - v[f][d];   // from the opposite vertex towards the face
                        }
                        nrm[0] = 0.5 * (u[1] * w[2] - u[2] * w[1]);
                        nrm[1] = 0.5 * (u[2] * w[0] - u[0] * w[2]);
                        nrm[2] = 0.5 * (u[0] * w[1] - u[1] * w[0]);
                        double s = nrm[0] * out[0] + nrm[1] * out[1] + nrm[2] * out[2] < 0 ? -1.0 : 1.0;
                        for (int d = 0; d < 3; d++) m.normals[e + (f + d * NNB) * m.nelr] = (float)(s * nrm[d]);
                    }
                }
    std::sort(faces.begin(), faces.end(), [](const FaceRec &a, const FaceRec &b) { return a.k < b.k; });
    for (size_t q = 0; q < faces.size();) {
        if (q + 1 < faces.size() && faces[q + 1].k == faces[q].k) {
            m.ese[faces[q].elem + faces[q].face * m.nelr] = faces[q + 1].elem;
            m.ese[faces[q + 1].elem + faces[q + 1].face * m.nelr] = faces[q].elem;
            q += 2;
        } else {   // a boundary face: on the box's surface (far field) or on the wing (wall)
            m.ese[faces[q].elem + faces[q].face * m.nelr] = -3;   // classified below
            q += 1;
        }
    }
    // classify boundary faces by where the face's centroid lies
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                for (int t = 0; t < 6; t++) {
                    int e = id[key(x, y, z, t)];
                    if (e < 0) continue;
                    int v[4][3];
                    tet_vertices(x, y, z, t, v);
                    for (int f = 0; f < 4; f++) {
                        if (m.ese[e + f * m.nelr] != -3) continue;
                        double c[3] = {0, 0, 0};
                        for (int q = 0; q < 4; q++)
                            if (q != f)
                                for (int d = 0; d < 3; d++) c[d] += v[q][d] / 3.0;
                        bool outer = c[0] <= 0 || c[1] <= 0 || c[2] <= 0 || c[0] >= NX || c[1] >= NY || c[2] >= NZ;
                        m.ese[e + f * m.nelr] = outer ? -2 : -1;
                    }
                }
    // Renumber: the first LEADING_WING_ELEMENTS tetrahedra under the wing whose face 0 is the wing
    // come first, every other element keeps its order behind them.
    std::vector<int> order, rest;
    for (int e = 0; e < n; e++) {
        if ((int)order.size() < LEADING_WING_ELEMENTS && m.ese[e] == -1 && m.ese[e + m.nelr] >= 0 &&
            m.ese[e + 2 * m.nelr] >= 0 && m.ese[e + 3 * m.nelr] >= 0)
            order.push_back(e);
        else
            rest.push_back(e);
    }
    order.insert(order.end(), rest.begin(), rest.end());
    std::vector<int> newid(n);
    for (int k = 0; k < n; k++) newid[order[k]] = k;
    Mesh r = m;
    for (int k = 0; k < n; k++) {
        int e = order[k];
        r.areas[k] = m.areas[e];
        for (int j = 0; j < NNB; j++) {
            int nb = m.ese[e + j * m.nelr];
            r.ese[k + j * m.nelr] = nb >= 0 ? newid[nb] : nb;
            for (int d = 0; d < NDIM; d++) r.normals[k + (j + d * NNB) * m.nelr] = m.normals[e + (j + d * NNB) * m.nelr];
        }
    }
    m = r;
    pad(m);
}

// ---- far field ------------------------------------------------------------------------------------
struct FarField { float var[NVAR]; FluxContribution fc; };

static FarField far_field()
{
    FarField ff;
    const float angle_of_attack = float(3.1415926535897931 / 180.0f) * float(DEG_ANGLE_OF_ATTACK);
    ff.var[VAR_DENSITY] = float(1.4);
    float ff_pressure = float(1.0f);
    float ff_speed_of_sound = sqrt(GAMMA * ff_pressure / ff.var[VAR_DENSITY]);
    float ff_speed = float(FF_MACH) * ff_speed_of_sound;
    float3 v = make_float3(ff_speed * float(cos((float)angle_of_attack)), ff_speed * float(sin((float)angle_of_attack)),
                           0.0f);
    ff.var[VAR_MOMENTUM + 0] = ff.var[VAR_DENSITY] * v.x;
    ff.var[VAR_MOMENTUM + 1] = ff.var[VAR_DENSITY] * v.y;
    ff.var[VAR_MOMENTUM + 2] = ff.var[VAR_DENSITY] * v.z;
    ff.var[VAR_DENSITY_ENERGY] = ff.var[VAR_DENSITY] * (float(0.5f) * (ff_speed * ff_speed)) + (ff_pressure / float(GAMMA - 1.0f));
    float3 momentum = make_float3(ff.var[VAR_MOMENTUM + 0], ff.var[VAR_MOMENTUM + 1], ff.var[VAR_MOMENTUM + 2]);
    ff.fc = flux_contribution(ff.var[VAR_DENSITY_ENERGY], momentum, ff_pressure, v);
    return ff;
}

// ---- CPU reference of the same launches -----------------------------------------------------------
struct Reference {
    const Mesh &m;
    const FarField &ff;
    std::vector<float> variables, old_variables, fluxes, step_factors;
    Reference(const Mesh &mesh, const FarField &f) : m(mesh), ff(f)
    {
        variables.assign((size_t)m.nelr * NVAR, 0.f);
        old_variables = fluxes = variables;
        step_factors.assign(m.nelr, 0.f);
    }
    void initialize(std::vector<float> &v, int threads)
    {
        for (int i = 0; i < threads; i++)
            for (int j = 0; j < NVAR; j++) v[i + (size_t)j * m.nelr] = ff.var[j];
    }
    float3 momentum(const std::vector<float> &v, int i) const
    {
        return make_float3(v[i + (VAR_MOMENTUM + 0) * (size_t)m.nelr], v[i + (VAR_MOMENTUM + 1) * (size_t)m.nelr],
                           v[i + (VAR_MOMENTUM + 2) * (size_t)m.nelr]);
    }
    void step_factor(int threads)
    {
        for (int i = 0; i < threads; i++) {
            float d = variables[i], de = variables[i + (size_t)VAR_DENSITY_ENERGY * m.nelr];
            float3 v = velocity_of(d, momentum(variables, i));
            float s2 = speed_sqd_of(v);
            float c = speed_of_sound_of(d, pressure_of(d, de, s2));
            step_factors[i] = 0.5f / (sqrtf(m.areas[i]) * (sqrtf(s2) + c));
        }
    }
    void flux(int threads)
    {
        const size_t R = m.nelr;
        for (int i = 0; i < threads; i++) {
            float d_i = variables[i], de_i = variables[i + VAR_DENSITY_ENERGY * R];
            float3 mo_i = momentum(variables, i), v_i = velocity_of(d_i, mo_i);
            float s2_i = speed_sqd_of(v_i), sp_i = sqrtf(s2_i), p_i = pressure_of(d_i, de_i, s2_i);
            float c_i = speed_of_sound_of(d_i, p_i);
            FluxContribution f_i = flux_contribution(de_i, mo_i, p_i, v_i);
            float fd = 0, fde = 0, fx = 0, fy = 0, fz = 0;
            for (int j = 0; j < NNB; j++) {
                int nb = m.ese[i + j * R];
                float nx = m.normals[i + (j + 0 * NNB) * R], ny = m.normals[i + (j + 1 * NNB) * R],
                      nz = m.normals[i + (j + 2 * NNB) * R];
                float nl = sqrtf(nx * nx + ny * ny + nz * nz);
                const float n3[3] = {nx, ny, nz};
                if (nb >= 0) {
                    float d = variables[nb], de = variables[nb + VAR_DENSITY_ENERGY * R];
                    float3 mo = momentum(variables, nb), v = velocity_of(d, mo);
                    float s2 = speed_sqd_of(v), p = pressure_of(d, de, s2), c = speed_of_sound_of(d, p);
                    FluxContribution f = flux_contribution(de, mo, p, v);
                    float fac = -nl * 0.2f * 0.5f * (sp_i + sqrtf(s2) + c_i + c);
                    fd += fac * (d_i - d);
                    fde += fac * (de_i - de);
                    fx += fac * (mo_i.x - mo.x);
                    fy += fac * (mo_i.y - mo.y);
                    fz += fac * (mo_i.z - mo.z);
                    const float mnb[3] = {mo.x, mo.y, mo.z}, mi[3] = {mo_i.x, mo_i.y, mo_i.z};
                    const float3 *A[4] = {&f.de, &f.mx, &f.my, &f.mz}, *B[4] = {&f_i.de, &f_i.mx, &f_i.my, &f_i.mz};
                    for (int c3 = 0; c3 < 3; c3++) {
                        float fc = 0.5f * n3[c3];
                        auto comp = [c3](const float3 *q) { return c3 == 0 ? q->x : c3 == 1 ? q->y : q->z; };
                        fd += fc * (mnb[c3] + mi[c3]);
                        fde += fc * (comp(A[0]) + comp(B[0]));
                        fx += fc * (comp(A[1]) + comp(B[1]));
                        fy += fc * (comp(A[2]) + comp(B[2]));
                        fz += fc * (comp(A[3]) + comp(B[3]));
                    }
                } else if (nb == -1) {
                    fx += nx * p_i;
                    fy += ny * p_i;
                    fz += nz * p_i;
                } else if (nb == -2) {
                    const float mi[3] = {mo_i.x, mo_i.y, mo_i.z};
                    const float3 *A[4] = {&ff.fc.de, &ff.fc.mx, &ff.fc.my, &ff.fc.mz},
                                 *B[4] = {&f_i.de, &f_i.mx, &f_i.my, &f_i.mz};
                    for (int c3 = 0; c3 < 3; c3++) {
                        float fc = 0.5f * n3[c3];
                        auto comp = [c3](const float3 *q) { return c3 == 0 ? q->x : c3 == 1 ? q->y : q->z; };
                        fd += fc * (ff.var[VAR_MOMENTUM + c3] + mi[c3]);
                        fde += fc * (comp(A[0]) + comp(B[0]));
                        fx += fc * (comp(A[1]) + comp(B[1]));
                        fy += fc * (comp(A[2]) + comp(B[2]));
                        fz += fc * (comp(A[3]) + comp(B[3]));
                    }
                }
            }
            fluxes[i] = fd;
            fluxes[i + (VAR_MOMENTUM + 0) * R] = fx;
            fluxes[i + (VAR_MOMENTUM + 1) * R] = fy;
            fluxes[i + (VAR_MOMENTUM + 2) * R] = fz;
            fluxes[i + VAR_DENSITY_ENERGY * R] = fde;
        }
    }
    void time_step(int j, int threads)
    {
        for (int i = 0; i < threads; i++) {
            float factor = step_factors[i] / float(RK + 1 - j);
            for (int v = 0; v < NVAR; v++)
                variables[i + (size_t)v * m.nelr] =
                    old_variables[i + (size_t)v * m.nelr] + factor * fluxes[i + (size_t)v * m.nelr];
        }
    }
};

int main(int argc, char **argv)
{
    const char *mesh_file = nullptr, *write_file = nullptr;
    long launches = -1;
    int iterations = 2000;
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else if (!strcmp(argv[a], "--launches") && a + 1 < argc) launches = atol(argv[++a]);
        else if (!strcmp(argv[a], "--iterations") && a + 1 < argc) iterations = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--write-mesh") && a + 1 < argc) write_file = argv[++a];
        else if (argv[a][0] != '-' && !mesh_file) mesh_file = argv[a];
        else { fprintf(stderr, "usage: cfd [MESH_FILE] [--iterations N] [--launches N] [--check] [--write-mesh FILE]\n"); return 2; }
    }
    if (iterations < 0 || launches < -1) { fprintf(stderr, "cfd: --iterations and --launches must be >= 0\n"); return 2; }

    Mesh m;
    if (mesh_file) {
        if (!read_mesh(mesh_file, m)) return 2;
    } else {
        generate_mesh(m);
    }
    if (write_file) return write_mesh(write_file, m) ? 0 : 2;   // no GPU work

    FarField ff = far_field();
    CK(cudaMemcpyToSymbol(ff_variable, ff.var, NVAR * sizeof(float)));
    CK(cudaMemcpyToSymbol(ff_flux_contribution_momentum_x, &ff.fc.mx, sizeof(float3)));
    CK(cudaMemcpyToSymbol(ff_flux_contribution_momentum_y, &ff.fc.my, sizeof(float3)));
    CK(cudaMemcpyToSymbol(ff_flux_contribution_momentum_z, &ff.fc.mz, sizeof(float3)));
    CK(cudaMemcpyToSymbol(ff_flux_contribution_density_energy, &ff.fc.de, sizeof(float3)));

    const int nelr = m.nelr;
    float *areas, *normals, *variables, *old_variables, *fluxes, *step_factors;
    int *ese;
    CK(cudaMalloc(&areas, nelr * sizeof(float)));
    CK(cudaMemcpy(areas, m.areas.data(), nelr * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&ese, (size_t)nelr * NNB * sizeof(int)));
    CK(cudaMemcpy(ese, m.ese.data(), (size_t)nelr * NNB * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&normals, (size_t)nelr * NDIM * NNB * sizeof(float)));
    CK(cudaMemcpy(normals, m.normals.data(), (size_t)nelr * NDIM * NNB * sizeof(float), cudaMemcpyHostToDevice));

    // Launches in the published order; `left` counts down the launches still allowed.
    long left = launches < 0 ? -1 : launches, done = 0;
    auto allowed = [&]() { if (left == 0) return false; if (left > 0) left--; done++; return true; };
    Reference ref(m, ff);
    const size_t vbytes = (size_t)nelr * NVAR * sizeof(float);
    CK(cudaMalloc(&variables, vbytes));
    if (allowed()) { cuda_initialize_variables<<<nelr / BLOCK_INIT, BLOCK_INIT>>>(nelr, variables); if (check) ref.initialize(ref.variables, nelr / BLOCK_INIT * BLOCK_INIT); }
    CK(cudaMalloc(&old_variables, vbytes));
    CK(cudaMalloc(&fluxes, vbytes));
    CK(cudaMalloc(&step_factors, nelr * sizeof(float)));
    if (allowed()) { cuda_initialize_variables<<<nelr / BLOCK_INIT, BLOCK_INIT>>>(nelr, old_variables); if (check) ref.initialize(ref.old_variables, nelr / BLOCK_INIT * BLOCK_INIT); }
    if (allowed()) { cuda_initialize_variables<<<nelr / BLOCK_INIT, BLOCK_INIT>>>(nelr, fluxes); if (check) ref.initialize(ref.fluxes, nelr / BLOCK_INIT * BLOCK_INIT); }
    CK(cudaMemset(step_factors, 0, nelr * sizeof(float)));
    CK(cudaDeviceSynchronize());
    for (int it = 0; it < iterations && left != 0; it++) {
        CK(cudaMemcpy(old_variables, variables, vbytes, cudaMemcpyDeviceToDevice));
        if (check) ref.old_variables = ref.variables;
        if (allowed()) {
            cuda_compute_step_factor<<<nelr / BLOCK_STEP, BLOCK_STEP>>>(nelr, variables, areas, step_factors);
            if (check) ref.step_factor(nelr / BLOCK_STEP * BLOCK_STEP);
        }
        for (int j = 0; j < RK; j++) {
            if (allowed()) {
                cuda_compute_flux<<<nelr / BLOCK_FLUX, BLOCK_FLUX>>>(nelr, ese, normals, variables, fluxes);
                if (check) ref.flux(nelr / BLOCK_FLUX * BLOCK_FLUX);
            }
            if (allowed()) {
                cuda_time_step<<<nelr / BLOCK_TIME, BLOCK_TIME>>>(j, nelr, old_variables, variables, step_factors, fluxes);
                if (check) ref.time_step(j, nelr / BLOCK_TIME * BLOCK_TIME);
            }
        }
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> out((size_t)nelr * NVAR);
    CK(cudaMemcpy(out.data(), variables, vbytes, cudaMemcpyDeviceToHost));
    double sum = 0;
    for (int v = 0; v < NVAR; v++)
        for (int i = 0; i < m.nel; i++) sum += out[i + (size_t)v * nelr];
    printf("cfd: nel %d, nelr %d, %ld launches, checksum %.8e\n", m.nel, nelr, done, sum);
    int rc = 0;
    if (check) {
        long bad = 0;
        for (size_t k = 0; k < out.size(); k++)
            bad += !(fabsf(out[k] - ref.variables[k]) <= 1e-3f * fmaxf(1.0f, fabsf(ref.variables[k])));
        printf("check: %s (%ld of %zu values differ)\n", bad ? "FAIL" : "PASS", bad, out.size());
        rc = bad ? 1 : 0;
    }
    CK(cudaFree(areas));
    CK(cudaFree(ese));
    CK(cudaFree(normals));
    CK(cudaFree(variables));
    CK(cudaFree(old_variables));
    CK(cudaFree(fluxes));
    CK(cudaFree(step_factors));
    return rc;
}
