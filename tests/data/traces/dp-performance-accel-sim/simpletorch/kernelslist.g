kernel-1.traceg
kernel-4.traceg
kernel-5.traceg
kernel-6.traceg
kernel-8.traceg
kernel-87.traceg
