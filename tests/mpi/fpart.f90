! SPDX-License-Identifier: LGPL-2.1-or-later
! fpart.f90 - MPI-4 partitioned communication from Fortran (MPICH: Open MPI
! 4.1 has none), on pairs of ranks: the even rank sends 8 partitions of
! 4096 integers to the odd one, 20 rounds of one mpi_psend_init and one
! mpi_precv_init. Each round the sender fills and marks its partitions
! last first (mpi_pready, mpi_pready_range, mpi_pready_list); the
! receiver checks each partition as soon as mpi_parrived says it is in,
! then every element after mpi_wait; a wrong value stops the job. Rank 0
! prints what passed, the same with and without libzcrecv-mpi.
program fpart
  implicit none
  include 'mpif.h'
  integer, parameter :: np = 8, nper = 4096, rounds = 20
  integer :: rank, nproc, peer, ierr, r, p, i, req, seen, k, nbad
  integer :: st(MPI_STATUS_SIZE), list(2)
  ! Written by the MPI behind the compiler's back: volatile.
  integer, volatile :: buf(nper * np)
  logical :: even, flag, got(np)

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nproc, ierr)
  nbad = 0
  if (mod(nproc, 2) /= 0) call mpi_abort(MPI_COMM_WORLD, 2, ierr)
  even = mod(rank, 2) == 0
  if (even) then
    peer = rank + 1
    call mpi_psend_init(buf, np, nper, MPI_INTEGER, peer, 5, &
                        MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  else
    peer = rank - 1
    call mpi_precv_init(buf, np, nper, MPI_INTEGER, peer, 5, &
                        MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  end if
  if (ierr /= MPI_SUCCESS) nbad = nbad + 1
  do r = 1, rounds
    if (.not. even) buf = -1
    call mpi_start(req, ierr)
    if (even) then
      ! Partitions 7 and 6 one by one, 5..2 as a range, 1 and 0 as a list.
      do p = np - 1, 0, -1
        do i = 1, nper
          buf(p * nper + i) = r * 1000000 + p * nper + i
        end do
        if (p >= 6) then
          call mpi_pready(p, req, ierr)
        else if (p == 2) then
          call mpi_pready_range(2, 5, req, ierr)
        end if
      end do
      list(1) = 1
      list(2) = 0
      call mpi_pready_list(2, list, req, ierr)
    else
      got = .false.
      seen = 0
      do while (seen < np)
        do p = 0, np - 1
          if (got(p + 1)) cycle
          call mpi_parrived(req, p, flag, ierr)
          if (.not. flag) cycle
          got(p + 1) = .true.
          seen = seen + 1
          k = p * nper + nper
          ! The partition's last element: in once parrived said so.
          if (buf(k) /= r * 1000000 + k) nbad = nbad + 1
        end do
      end do
    end if
    call mpi_wait(req, st, ierr)
    if (.not. even) then
      do i = 1, nper * np
        if (buf(i) /= r * 1000000 + i) nbad = nbad + 1
      end do
    end if
  end do
  call mpi_request_free(req, ierr)
  if (nbad /= 0) then
    print *, 'fpart: rank', rank, nbad, 'wrong values'
    call mpi_abort(MPI_COMM_WORLD, 3, ierr)
  end if
  call mpi_barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a)', 'fpart: ok: 20 rounds of 8 partitions, &
    &each checked when it arrived'
  call mpi_finalize(ierr)
end program fpart
