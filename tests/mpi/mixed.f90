! SPDX-License-Identifier: LGPL-2.1-or-later
! mixed.f90 - Fortran and C in one program share one point-to-point path:
! rank 0 sends from Fortran what rank 1 receives in C (cside, mixed_c.c),
! and receives in Fortran what rank 1 sends from C.
program mixed
  implicit none
  include 'mpif.h'
  integer :: rank, ierr, st(MPI_STATUS_SIZE), buf(100), i, req, n
  external cside
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) then
    do i = 1, 100
      buf(i) = i
    end do
    call mpi_send(buf, 100, MPI_INTEGER, 1, 11, MPI_COMM_WORLD, ierr)
    call mpi_irecv(buf, 100, MPI_INTEGER, MPI_ANY_SOURCE, 12, &
                   MPI_COMM_WORLD, req, ierr)
    call mpi_wait(req, st, ierr)
    call mpi_get_count(st, MPI_INTEGER, n, ierr)
    if (n /= 50 .or. buf(50) /= 100 .or. st(MPI_SOURCE) /= 1) then
      print *, 'mixed: wrong', n, buf(50), st(MPI_SOURCE)
      call mpi_abort(MPI_COMM_WORLD, 3, ierr)
    end if
    print *, 'mixed: ok'
  else if (rank == 1) then
    call cside()
  end if
  call mpi_finalize(ierr)
end program mixed
