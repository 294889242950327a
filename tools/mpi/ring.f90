! SPDX-License-Identifier: LGPL-2.1-or-later
! ring.f90 - Fortran check of the tracer: passes a block around a ring
! (mpi_recv / mpi_send) and reduces a sum (mpi_allreduce) each round.
!   mpirun -np 3 ring
program ring
  implicit none
  include 'mpif.h'
  integer :: rank, nproc, ierr, it, st(MPI_STATUS_SIZE)
  double precision :: buf(1024), s, gs
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nproc, ierr)
  buf = rank
  do it = 1, 10
    if (rank == 0) then
      call mpi_send(buf, 1024, MPI_DOUBLE_PRECISION, mod(rank + 1, nproc), 5, MPI_COMM_WORLD, ierr)
      call mpi_recv(buf, 1024, MPI_DOUBLE_PRECISION, nproc - 1, 5, MPI_COMM_WORLD, st, ierr)
    else
      call mpi_recv(buf, 1024, MPI_DOUBLE_PRECISION, rank - 1, 5, MPI_COMM_WORLD, st, ierr)
      call mpi_send(buf, 1024, MPI_DOUBLE_PRECISION, mod(rank + 1, nproc), 5, MPI_COMM_WORLD, ierr)
    end if
    s = buf(1)
    call mpi_allreduce(s, gs, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  if (rank == 0) print *, 'ring: sum', gs
  call mpi_finalize(ierr)
end program ring
